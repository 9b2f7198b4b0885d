"""What a call relays back to the model: its first page, read-on in a cut result, the asks it
waits on, and the resources a server listed or linked (`resources/read`).

Mixed into `Bridge`; the methods reach its settings, results, links and worker loop.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING

import mcp_types as types

from bridge.errors import BridgeError
from bridge.models import InputRequested, ServerSpec
from bridge.tools import output, validation
from bridge.tools.parked import Asks
from bridge.tools.reply import Reply

if TYPE_CHECKING:
    from bridge.tools.bridge import Bridge

# The reserved tool name that reads a resource the server listed or linked (`mcp_call_tool`).
RESOURCES_READ = "resources/read"

_MAX_LINKED = 256


def _as_block(item: types.TextResourceContents | types.BlobResourceContents) -> types.ContentBlock:
    """A resource's contents as a tool result block: text as text, a picture or a sound as media."""
    if isinstance(item, types.TextResourceContents):
        return types.TextContent(type="text", text=item.text)
    mime = item.mime_type or ""
    if mime.startswith("image/"):
        return types.ImageContent(type="image", data=item.blob, mime_type=mime)
    if mime.startswith("audio/"):
        return types.AudioContent(type="audio", data=item.blob, mime_type=mime)
    return types.EmbeddedResource(type="resource", resource=item)


class Relayed:
    """Mixed into `Bridge`: the way a result, a read-on or a resource comes back."""

    def _first_page(
        self: Bridge, name: str, tool: str, caller: str, result: types.CallToolResult, notes: list[str]
    ) -> Reply:
        rendering = output.render(result, self.settings.max_media_bytes)
        self._remember_links(name, rendering.linked)
        full = "\n".join(part for part in (rendering.full, *notes) if part)
        handle = self.results.keep(caller, name, tool, full) if len(full) > self.settings.max_chars else None
        data, text = output.call_result(
            name, tool, rendering, result.structured_content, self.settings.max_chars, notes=notes, handle=handle
        )
        if result.is_error:
            raise BridgeError("tool_error", f"{name}/{tool} failed: {text}")
        return Reply(text=text, data=data, blocks=tuple(rendering.blocks))

    def _read_on(self: Bridge, name: str, tool: str, caller: str, handle: object, offset: object) -> Reply:
        handle = validation.result_handle(handle)
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise BridgeError("invalid_argument", "offset must be a whole number of characters, 0 or more")
        text = self.results.text(handle, caller, name, tool)
        if offset >= len(text):
            raise BridgeError("invalid_argument", f"offset {offset} is past the end of the result ({len(text)} characters)")
        rendering = output.Rendering(full=text, blocks=[], summaries=[], linked=[])
        data, shown = output.call_result(name, tool, rendering, None, self.settings.max_chars, handle=handle, offset=offset)
        return Reply(text=shown, data=data)

    def _asks(self: Bridge, name: str, tool: str, asks: Asks) -> Reply:
        described = [
            f"{key}: {'elicitation' if isinstance(ask, types.ElicitRequest) else 'sampling'} request"
            for key, ask in asks.requests.items()
        ]
        data = InputRequested(server=name, tool=tool, asks=described)
        text = f"{name}/{tool} waits for the user's answer to: " + "; ".join(described)
        required = types.InputRequiredResult(input_requests=dict(asks.requests), request_state=asks.state)
        return Reply(text=text, data=data, input_required=required)

    def _remember_links(self: Bridge, name: str, uris: list[str]) -> None:
        linked = self.linked.setdefault(name, OrderedDict())
        for uri in uris:
            linked[uri] = None
            linked.move_to_end(uri)
        while len(linked) > _MAX_LINKED:
            linked.popitem(last=False)

    async def _read_resource(self: Bridge, name: str, spec: ServerSpec, arguments: dict[str, object], caller: str) -> Reply:
        uri = arguments.get("uri")
        if not isinstance(uri, str) or not uri or set(arguments) != {"uri"}:
            raise BridgeError("invalid_argument", 'resources/read takes arguments_json {"uri": "<a URI the server listed or linked>"}')
        linked = uri in self.linked.get(name, {})
        contents = await self.runtime.run_async(lambda: self.sessions.read_resource(name, spec, uri, linked=linked))
        result = types.CallToolResult(content=[_as_block(item) for item in contents])
        return self._first_page(name, RESOURCES_READ, caller, result, [])

