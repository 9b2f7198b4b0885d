"""The four tools for sync callers (agent loops, tests, the CLI): each blocks on its async face.

A sync call also waits for its audit line to be written, so when it returns the trail holds it; the
async faces never wait for that (the loop serving the host must not block on the audit lock).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bridge.tools.bridge import Bridge
    from bridge.tools.reply import Reply


class SyncFaces:
    """Mixed into `Bridge`: the same tools, awaited on the worker loop from a plain thread."""

    def _wait(self: Bridge, face: Callable[[], Awaitable[Reply]]) -> Reply:
        reply = self.runtime.run(face)
        self.audit.flush()
        return reply

    def list_tools(
        self: Bridge, server: str | None = None, tool_name: str | None = None, query: str | None = None, limit: int | None = None
    ) -> Reply:
        return self._wait(lambda: self.list_tools_async(server, tool_name, query=query, limit=limit))

    def call_tool(
        self: Bridge,
        server: str,
        tool_name: str,
        arguments_json: object = "{}",
        result_handle: str | None = None,
        offset: int | None = None,
    ) -> Reply:
        """No host channel: the server's asks are declined, its progress and logs go nowhere."""
        return self._wait(
            lambda: self.call_tool_async(server, tool_name, arguments_json, result_handle=result_handle, offset=offset)
        )

    def add_server(
        self: Bridge,
        name: str,
        url: str | None = None,
        headers_json: str | None = None,
        command: str | None = None,
        args_json: str | None = None,
        cwd: str | None = None,
        env_json: str | None = None,
    ) -> Reply:
        return self._wait(lambda: self.add_server_async(name, url, headers_json, command, args_json, cwd, env_json))

    def remove_server(self: Bridge, name: str) -> Reply:
        return self._wait(lambda: self.remove_server_async(name))
