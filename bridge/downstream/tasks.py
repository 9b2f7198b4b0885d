"""Task-augmented tool calls (2025-11-25): how a tool that can only run as a task is run.

Kept apart from the pool (`bridge.downstream.pool`), which decides on which session a call runs;
this is what happens on that session once the tool turns out to be task-only.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from bridge import internals
from bridge.downstream.relay import CallRelay
from bridge.errors import BridgeError

_TASK_TTL_MS = 10 * 60 * 1000  # how long a task's server keeps it for us
_TASK_CANCEL_S = 2.0  # given to tasks/cancel when a task's call is given up on

TASKS_UNAVAILABLE = (
    "can only run as a task (execution.taskSupport=required), and this server does not offer "
    "task-augmented calls in the handshake era, the only one the bridge can run tasks in"
)


def task_only(tool: types.Tool) -> bool:
    return tool.execution is not None and tool.execution.task_support == "required"


def runs_tasks(client: Client) -> bool:
    """Whether the bridge can run a task-only tool on this session (2025-11-25 task-augmented calls)."""
    tasks = client.server_capabilities.tasks
    requests = tasks.requests if tasks is not None else None
    offers = requests is not None and requests.tools is not None and requests.tools.call is not None
    return offers and client.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS


async def call_as_task(client: Client, tool_name: str, arguments: dict[str, Any], relay: CallRelay) -> types.CallToolResult:
    """Run a task-only tool as a task (2025-11-25): create it, relay its status messages as
    progress while it works, then take its result (`tasks/result` waits for the end, and
    delivers what the server asks meanwhile). Within the call's deadline; a call given up on
    cancels the task. The 2026-07-28 tasks extension is not in the SDK client: such a server,
    or one that does not offer task-augmented calls, gets a refusal at once."""
    if not runs_tasks(client):
        raise BridgeError("protocol_error", f"Tool {tool_name!r} {TASKS_UNAVAILABLE}.")
    request = types.CallToolRequest(
        params=types.CallToolRequestParams(name=tool_name, arguments=arguments, task=types.TaskMetadata(ttl=_TASK_TTL_MS))
    )
    task = types.CreateTaskResult.model_validate(await internals.send_unchecked(client.session, request)).task
    try:
        steps, said = 0, None
        while task.status == "working":
            if task.status_message != said:
                steps, said = steps + 1, task.status_message
                await relay.progress(steps, None, said)
            await anyio.sleep(min(max((task.poll_interval or 500) / 1000, 0.05), 5.0))
            task = await client.session.send_request(
                types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task.task_id)), types.GetTaskResult
            )
        payload = types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task.task_id))
        return await client.session.send_request(payload, types.CallToolResult)
    except BaseException:
        with anyio.move_on_after(_TASK_CANCEL_S, shield=True):
            cancel = types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task.task_id))
            await client.session.send_request(cancel, types.CancelTaskResult)
        raise
