"""What a downstream server sends back during a call, and how it reaches the host that called.

This is the *call context* of the design: a call carries the calling host's `Abilities` (what it
can answer: elicitation in form and URL mode, sampling with or without tools, roots; the log level
it asked for) and a `HostChannel`, the way back up (progress, logs, and *asks*: elicitation and
sampling requests). `bridge.host` implements the channel for each protocol era; this module only
knows the protocol, so the tools and the pool stay free of FastMCP's server side.

`CallRelay` stands between one call's downstream session and its channel:
- progress is forwarded in order, at most one per `progress_interval_s` and `max_progress` a call;
  the latest one held back goes up when the call ends, so the host sees where it stopped;
- logs: at most `max_logs` a call, each cut to `LOG_CHARS`; the model is told how many were dropped;
- an ask the host cannot answer (no such capability, or no channel) is refused at once, an
  elicitation with `decline`, a sampling request with an error, and the model is told why; an ask
  the host answers goes back down as the host sent it;
- an elicitation reaches the host attributed ("The MCP server 'NAME' asks: ..."), its message on
  one line; a URL-mode one only for an `https` URL, or `http` to this machine (a `javascript:`,
  `file:` or `data:` URL, or plain `http` across the network, is declined and the model told);
- `roots/list` is answered here, never by the host: the roots the child may really use. A stdio
  server is told of roots whatever its host declares (Claude Desktop and ChatGPT declare none), in
  both eras: its session tries the handshake era first, where a server asks `roots/list` itself,
  and a 2026-07-28 server's `input_required` ask for roots is answered the same way. Roots never
  change during a session (the workspace is fixed at start; a new cwd re-registers the server,
  which closes its sessions), so `listChanged` is false: the next session lists the new roots.
While the host's person answers an ask, the call's timeout clock stops (`Clock`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

import anyio
import mcp_types as types

from bridge.models import ServerSpec, StdioServerSpec
from bridge.ssrf import literal_address, normalise_host
from bridge.wording import one_line, quoted, shown_name

LOG_CHARS = 2000
_ASK_EXCERPT = 120

Ask = types.ElicitRequest | types.CreateMessageRequest
Answer = types.ElicitResult | types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData


@dataclass(frozen=True)
class Abilities:
    """What the calling host can answer, advertised downstream as client capabilities, no more.

    The pool keys warm sessions on it: a session opened for a host that can elicit is never the
    one a host that cannot uses, so a server that lists tools by capability lists the same tools
    through the bridge as it would to that host directly.
    """

    elicit_form: bool = False
    elicit_url: bool = False
    sampling: bool = False
    sampling_tools: bool = False
    roots: bool = False
    log_level: types.LoggingLevel | None = None

    @classmethod
    def of(cls, capabilities: types.ClientCapabilities | None, log_level: types.LoggingLevel | None) -> Abilities:
        """A host's abilities from the capabilities it declared (an empty `elicitation` means form)."""
        caps = capabilities or types.ClientCapabilities()
        elicitation = caps.elicitation
        form = elicitation is not None and (elicitation.form is not None or elicitation.url is None)
        return cls(
            elicit_form=form,
            elicit_url=elicitation is not None and elicitation.url is not None,
            sampling=caps.sampling is not None,
            sampling_tools=caps.sampling is not None and caps.sampling.tools is not None,
            roots=caps.roots is not None,
            log_level=log_level,
        )

    @property
    def asks(self) -> bool:
        """The host answers elicitation or sampling: the downstream may push a request up."""
        return self.elicit_form or self.elicit_url or self.sampling

    @property
    def exclusive(self) -> bool:
        """One call at a time on such a session: asks and logs carry no request id on the wire
        (stdio has no per-request stream), so the session's one call is the one they belong to."""
        return self.asks or self.log_level is not None

    def for_server(self, spec: ServerSpec) -> Abilities:
        """The abilities a session with `spec` advertises: the host's, and roots for a stdio server,
        which the bridge answers itself (the workspace and the child's cwd)."""
        return replace(self, roots=True) if isinstance(spec, StdioServerSpec) and not self.roots else self

    @property
    def handshake_first(self) -> bool:
        """Server-initiated requests exist only in the handshake era: try it first for these."""
        return self.asks or self.roots

    def capabilities(self) -> types.ClientCapabilities:
        elicitation = None
        if self.elicit_form or self.elicit_url:
            elicitation = types.ElicitationCapability(
                form=types.FormElicitationCapability() if self.elicit_form else None,
                url=types.UrlElicitationCapability() if self.elicit_url else None,
            )
        sampling = None
        if self.sampling:
            sampling = types.SamplingCapability(tools=types.SamplingToolsCapability() if self.sampling_tools else None)
        roots = types.RootsCapability(list_changed=False) if self.roots else None
        return types.ClientCapabilities(elicitation=elicitation, sampling=sampling, roots=roots)


class HostChannel(Protocol):
    """The way up to the host whose call this is; `bridge.host` implements one per protocol era."""

    @property
    def abilities(self) -> Abilities: ...

    @property
    def wants_progress(self) -> bool:
        """The host gave its request a progress token."""
        ...

    @property
    def defers_asks(self) -> bool:
        """The host takes asks only as an `input_required` result of its call (2026-07-28)."""
        ...

    @property
    def caller(self) -> str:
        """Who is calling: what a parked call's state and a result handle are bound to."""
        ...

    async def progress(self, progress: float, total: float | None, message: str | None) -> None: ...

    async def log(self, params: types.LoggingMessageNotificationParams) -> None: ...

    async def ask(self, request: Ask) -> Answer:
        """Put an elicitation or sampling request to the host; its answer, or why it gave none."""
        ...


@dataclass(frozen=True)
class RelayLimits:
    progress_interval_s: float = 0.1
    max_progress: int = 100
    max_logs: int = 50


class Clock:
    """A call's deadline, stopped while the host's person answers an ask (nested asks count once)."""

    def __init__(self, scope: anyio.CancelScope) -> None:
        self._scope = scope
        self._pauses = 0
        self._left = 0.0

    @contextmanager
    def stopped(self) -> Iterator[None]:
        if not self._pauses:
            self._left = self._scope.deadline - anyio.current_time()
            self._scope.deadline = math.inf
        self._pauses += 1
        try:
            yield
        finally:
            self._pauses -= 1
            if not self._pauses:
                self._scope.deadline = anyio.current_time() + self._left


def roots_for(spec: ServerSpec, workspace: Path) -> list[types.Root]:
    """The roots a server may really use: a stdio child the workspace and its own cwd; an HTTP
    server, which cannot see this machine's files, none (and no local path leaks to it)."""
    if not isinstance(spec, StdioServerSpec):
        return []
    paths = [workspace]
    if spec.cwd is not None:
        cwd = (workspace / spec.cwd).resolve()
        if cwd != workspace:
            paths.append(cwd)
    return [types.Root(uri=path.as_uri(), name=path.name or str(path)) for path in paths]


def _excerpt(text: str) -> str:
    return quoted(one_line(text), _ASK_EXCERPT)


def _on_this_machine(url: str) -> bool:
    try:
        host = normalise_host(url)
    except ValueError:
        return False
    address = literal_address(host)
    return address.is_loopback if address is not None else host == "localhost" or host.endswith(".localhost")


def url_refusal(url: str) -> str | None:
    """Why a URL-mode elicitation's URL is not put to the host's person, or None: only `https`, or
    `http` to this machine (a local sign-in page), is a page a person may safely be sent to."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        return f"its scheme is {quoted(scheme, 40)}" if scheme else "it is not an absolute URL"
    if not parts.hostname:
        return "it names no host"
    if scheme == "http" and not _on_this_machine(url):
        return "it is plain http to another machine"
    return None


def _bounded(data: object) -> object:
    """A log message's data as sent, unless its JSON is over `LOG_CHARS`: then its cut text."""
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
    if len(text) <= LOG_CHARS:
        return data
    return text[: LOG_CHARS - 1] + "…"


@dataclass
class CallRelay:
    """One call's relay between its downstream session and the host's channel (see the module)."""

    channel: HostChannel | None
    roots: Callable[[], list[types.Root]]  # made when the server asks: most calls never do
    server: str = ""  # who asks, as the host's person is told
    limits: RelayLimits = field(default_factory=RelayLimits)
    clock: Clock | None = None
    notes: list[str] = field(default_factory=list)
    _sent_progress: int = 0
    _last_sent: float = -math.inf
    _held: tuple[float, float | None, str | None] | None = None
    _logs: int = 0
    _dropped_logs: int = 0

    @property
    def abilities(self) -> Abilities:
        return self.channel.abilities if self.channel is not None else Abilities()

    # -- progress and logs ------------------------------------------------------------------

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        if self.channel is None:
            return
        now = anyio.current_time()
        if self._sent_progress >= self.limits.max_progress or now - self._last_sent < self.limits.progress_interval_s:
            self._held = (progress, total, message)  # the latest one held back goes up at the end
            return
        await self._send_progress(progress, total, message, now)

    async def _send_progress(self, progress: float, total: float | None, message: str | None, now: float) -> None:
        assert self.channel is not None
        self._held = None
        self._last_sent = now
        self._sent_progress += 1
        await self.channel.progress(progress, total, message)

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        if self.channel is None or self.abilities.log_level is None:
            return
        if self._logs >= self.limits.max_logs:
            self._dropped_logs += 1
            return
        self._logs += 1
        await self.channel.log(params.model_copy(update={"data": _bounded(params.data)}))

    async def finish(self) -> None:
        """Send the progress held back, and note the logs dropped; the call is over."""
        if self._held is not None:
            await self._send_progress(*self._held, anyio.current_time())
        if self._dropped_logs:
            self.notes.append(
                f"[{self._dropped_logs} more log messages from the server were dropped after the first {self._logs}]"
            )

    # -- requests from the server ----------------------------------------------------------

    async def elicit(self, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        """The server's elicitation, put to the host's person as the server's, when the host can answer it."""
        return await self._elicit(params, f"The MCP server {quoted(shown_name(self.server))} asks: ")

    async def elicit_for_bridge(self, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        """The bridge's own elicitation (open a sign-in page), under the same rules."""
        return await self._elicit(params, "")

    async def _elicit(self, params: types.ElicitRequestParams, asker: str) -> types.ElicitResult | types.ErrorData:
        url = isinstance(params, types.ElicitRequestURLParams)
        able = self.abilities.elicit_url if url else self.abilities.elicit_form
        if self.channel is None or not able:
            mode = "URL" if url else "form"
            self.notes.append(
                f"[The server asked the user ({mode} elicitation: {_excerpt(params.message)}); this host cannot "
                "answer that, so the bridge declined it.]"
            )
            return types.ElicitResult(action="decline")
        if isinstance(params, types.ElicitRequestURLParams) and (why := url_refusal(params.url)) is not None:
            self.notes.append(
                f"[The server asked the user to open {quoted(params.url, _ASK_EXCERPT)}; the bridge declined it, as "
                f"{why}: it sends a person only to https pages, or http ones on this machine.]"
            )
            return types.ElicitResult(action="decline")
        message = asker + one_line(params.message)
        answer = await self._ask(types.ElicitRequest(params=params.model_copy(update={"message": message})))
        if isinstance(answer, types.ElicitResult | types.ErrorData):
            return answer
        return types.ErrorData(code=types.INTERNAL_ERROR, message="The host answered an elicitation with a sampling result.")

    async def sample(
        self, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
        wants_tools = bool(params.tools) or params.tool_choice is not None
        able = self.abilities.sampling and (self.abilities.sampling_tools or not wants_tools)
        if self.channel is None or not able:
            what = "sampling with tools" if wants_tools and self.abilities.sampling else "sampling"
            self.notes.append(
                f"[The server asked the host's model for a completion; this host cannot answer {what}, so the bridge refused it.]"
            )
            return types.ErrorData(code=types.INVALID_REQUEST, message=f"The client cannot answer {what} requests.")
        answer = await self._ask(types.CreateMessageRequest(params=params))
        if isinstance(answer, types.ElicitResult):
            return types.ErrorData(code=types.INTERNAL_ERROR, message="The host answered a sampling request with an elicitation result.")
        return answer

    async def list_roots(self) -> types.ListRootsResult:
        return types.ListRootsResult(roots=self.roots())

    async def _ask(self, request: Ask) -> Answer:
        assert self.channel is not None
        with self.clock.stopped() if self.clock is not None else _no_pause():
            answer = await self.channel.ask(request)
        if isinstance(answer, types.ErrorData):
            self.notes.append(f"[The host did not answer the server's {request.method} request: {_excerpt(answer.message)}]")
        return answer


@contextmanager
def _no_pause() -> Iterator[None]:
    yield
