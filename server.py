"""Launch the bridge from this checkout with the developer's servers of `config.py`."""

import sys

import config
from bridge.host.main import main

if __name__ == "__main__":
    sys.exit(main(config_servers=config.MCP_SERVERS))
