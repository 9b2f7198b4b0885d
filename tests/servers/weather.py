"""Weather fixture: a stdio server that reads its API key from the environment, as many do.

Tool: forecast(city) says whether WEATHER_API_KEY is set and, if so, its SHA-256: a test can check
which key arrived while the key itself shows nowhere.

Run: ``python weather.py`` (stdio).
"""

import hashlib
import logging
import os

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError

logging.getLogger("fastmcp").setLevel(logging.WARNING)  # keep stderr quiet (no INFO lines)

mcp = FastMCP("weather-fixture")


@mcp.tool(description="The forecast for a city (needs WEATHER_API_KEY).")
def forecast(city: str) -> str:
    key = os.environ.get("WEATHER_API_KEY")
    if not key:
        raise ToolError("WEATHER_API_KEY is not set")
    return f"WEATHER_API_KEY is set (sha256 {hashlib.sha256(key.encode()).hexdigest()}): sunny in {city}"


if __name__ == "__main__":
    mcp.run(show_banner=False)
