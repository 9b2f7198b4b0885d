"""The developer's per-server tool policy: which downstream tools a call may reach.

Names are checked before any session opens; `read_only` needs the tool's annotations, so it is
checked against the catalog. Listings use the same function to mark what cannot be called.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

import mcp_types as types

from bridge.errors import BridgeError
from bridge.models import ToolPolicy


def refused_by_name(policy: ToolPolicy | None, name: str) -> str | None:
    """Why `name` may not be called under `policy`, judged by its name alone; None when it may."""
    if policy is None:
        return None
    denied = next((pattern for pattern in policy.deny if fnmatchcase(name, pattern)), None)
    if denied is not None:
        return f"denied by the tool policy (deny {denied!r})"
    if policy.allow and not any(fnmatchcase(name, pattern) for pattern in policy.allow):
        return f"not in the tool policy's allow list ({', '.join(policy.allow)})"
    return None


def refused(policy: ToolPolicy | None, tool: types.Tool) -> str | None:
    """Why `tool` may not be called under `policy`; None when it may."""
    reason = refused_by_name(policy, tool.name)
    if reason is not None or policy is None or not policy.read_only:
        return reason
    if tool.annotations is not None and tool.annotations.read_only_hint is True:
        return None
    return "the server is read-only here and the tool is not annotated readOnlyHint: true"


def require_callable(policy: ToolPolicy | None, server: str, tool: str | types.Tool) -> None:
    """Refuse (`forbidden`, with the reason) a call the policy does not admit: by name before any
    session opens, and again with the tool's definition once the catalog is known."""
    reason = refused_by_name(policy, tool) if isinstance(tool, str) else refused(policy, tool)
    if reason is not None:
        name = tool if isinstance(tool, str) else tool.name
        raise BridgeError("forbidden", f"{server}/{name} cannot be called: {reason}.", reason=reason)
