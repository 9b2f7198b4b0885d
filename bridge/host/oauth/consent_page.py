"""The owner's consent page: a plain HTML form asking for the pairing code; everything shown is escaped."""

from __future__ import annotations

from html import escape
from urllib.parse import urlsplit

from starlette.responses import HTMLResponse

from bridge.host.oauth.state import PendingRequest

_STYLE = "body{font-family:sans-serif;max-width:36em;margin:3em auto;padding:0 1em}code{word-break:break-all}"


def _headers(form_target: str | None) -> dict[str, str]:
    """No caching, no framing (clickjacking), no referrer; the form may post here and redirect on."""
    form_action = "'none'"
    if form_target is not None:
        parts = urlsplit(form_target)
        form_action = f"'self' {parts.scheme}://{parts.netloc}"
    return {
        "Cache-Control": "no-store",
        "Pragma": "no-cache",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "no-referrer",
        "Content-Security-Policy": (
            f"default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; form-action {form_action}"
        ),
    }


def _page(title: str, body: str) -> str:
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body><h1>{escape(title)}</h1>{body}</body></html>"
    )


def consent_response(
    pending: PendingRequest, request_id: str, action_url: str, problem: str | None = None, status_code: int = 200
) -> HTMLResponse:
    """The form: who asks, where the answer goes, and one input for the code."""
    name = pending.client_name or "An unnamed client"
    scopes = " ".join(pending.scopes) or "(none)"
    notice = f"<p role=alert><strong>{escape(problem)}</strong></p>" if problem else ""
    body = (
        f"{notice}<p><strong>{escape(name)}</strong> asks to use this MCP bridge.</p>"
        f"<p>Request: <strong>{escape(pending.name)}</strong><br>"
        f"Client ID: <code>{escape(pending.client_id)}</code><br>"
        f"It will be sent back to: <code>{escape(pending.redirect_uri)}</code><br>"
        f"Scopes: <code>{escape(scopes)}</code></p>"
        f"<p>If you started this, enter the pairing code of request <strong>{escape(pending.name)}</strong> "
        "that the bridge printed to its log (or run <code>mcp-bridge auth pending</code>). "
        "Otherwise close this page.</p>"
        f'<form method=post action="{escape(action_url)}">'
        f'<input type=hidden name=request value="{escape(request_id)}">'
        '<label>Pairing code <input name=code autocomplete=off autofocus required></label> '
        "<button type=submit>Allow</button></form>"
    )
    return HTMLResponse(
        _page("Allow this client?", body), status_code=status_code, headers=_headers(pending.redirect_uri)
    )


def error_response(message: str, status_code: int = 400) -> HTMLResponse:
    """A dead end the owner reads: the request is unknown or already finished."""
    return HTMLResponse(
        _page("Request not available", f"<p>{escape(message)}</p>"), status_code=status_code, headers=_headers(None)
    )
