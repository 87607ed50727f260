"""Task-augmented tool calls (MCP 2025-11-25 tasks): create, poll, fetch, cancel.

A tool listed with ``execution.taskSupport`` ``"required"`` or ``"optional"`` is called as
a task when the server declares ``tasks.requests.tools.call``: the call answers at once
with a task, eve polls ``tasks/get`` (at the server's ``pollInterval``, within bounds)
until it ends, then reads ``tasks/result``, the tool's result as a plain call would
answer it. Each request is bounded by ``call_timeout_seconds``, the task as a whole is
not (that is what tasks are for). While the task works its status is a partial of the
call (``{"task": "working", "message": …}``). When the turn is cancelled, eve sends
``tasks/cancel`` and the call ends as ``MCPTaskCancelled``. A task that needs input
(``input_required``) is read through ``tasks/result`` at once, which carries the
server's requests (elicitation, sampling) to the call's turn and waits for the result.
A durable turn records the task's id once the server answers (``CallAsks.sending``), and a
run again after a restart polls that task (``resume``) instead of calling the tool again.

The ``mcp`` SDK has no client side for tasks: ``tasks/*`` are its own request types, sent
through ``ClientSession.send_request``, but it checks every ``tools/call`` answer as a
``CallToolResult``, so the call that creates the task goes through the session's
dispatcher (``_send_unchecked``: the one place eve reaches below the session's public
API, as ``rpc_errors`` reads its closed flag). Without the server's capability, a
``"required"`` tool is left out of the listing and an ``"optional"`` one is called plainly.
"""

from __future__ import annotations

import asyncio
from typing import Any

import mcp_types
from mcp import ClientSession

from eve.errors import MCPTaskCancelled, MCPToolFailed
from eve.runtime.partials import Report
from eve.runtime.server_asks import CallAsks

#: task-augmented support a listing may give a tool, by the spec's names
TASK_SUPPORT = ("required", "optional")
#: how often a task is polled when the server suggests nothing, and the bounds on what
#: it may suggest
_DEFAULT_POLL = 0.5
_MIN_POLL, _MAX_POLL = 0.01, 5.0
#: how long the server keeps a finished task for eve to read, asked at creation
_TTL_MS = 10 * 60 * 1000


def runs_tasks(session: ClientSession) -> bool:
    """Whether the server takes task-augmented ``tools/call`` requests."""
    tasks = session.server_capabilities.tasks if session.server_capabilities else None
    requests = tasks.requests if tasks is not None else None
    return requests is not None and requests.tools is not None and requests.tools.call is not None


def task_support(tool: mcp_types.Tool) -> str | None:
    """``required`` or ``optional`` as the tool is listed; None for a plain tool."""
    support = tool.execution.task_support if tool.execution is not None else None
    return support if support in TASK_SUPPORT else None


async def call_as_task(
    session: ClientSession,
    tool: str,
    arguments: dict[str, object],
    *,
    seconds: float,
    connection: str,
    asks: CallAsks | None,
    report: Report | None,
    resume: str | None = None,
) -> mcp_types.CallToolResult:
    """Run ``tool`` as a task to its end and return its result (see the module); with
    ``resume``, the task an earlier run of the turn started (its record is in ``asks``'s
    turn) is polled instead of a new one."""
    if resume is None:
        task = await _created(session, tool, arguments, seconds)
        if asks is not None:
            await asks.sending(task_id=task.task_id)  # a run again reads it, not calls again
    else:
        task = await _state(session, resume, seconds)
    while task.status == "working":
        if asks is not None and asks.cancelled:
            await _cancel(session, task.task_id, seconds)
            raise MCPTaskCancelled(
                f"connection {connection!r}: tool {tool!r} ran as task {task.task_id}, "
                "cancelled on the server with the turn",
                connection=connection,
                tool=tool,
                task_id=task.task_id,
            )
        if report is not None:
            await report({"task": task.status, "message": task.status_message or ""})
        await asyncio.sleep(_interval(task))
        task = await _state(session, task.task_id, seconds)
    if task.status == "cancelled":
        raise MCPToolFailed(
            f"connection {connection!r}: task {task.task_id} of tool {tool!r} was cancelled "
            f"by the server{': ' + task.status_message if task.status_message else ''}",
            connection=connection,
            tool=tool,
        )
    # completed or failed: the result is ready; input_required: reading it carries the
    # server's questions to the turn, and waits (no timeout: a person may be asked)
    waits = task.status == "input_required"
    return await session.send_request(
        mcp_types.GetTaskPayloadRequest(
            params=mcp_types.GetTaskPayloadRequestParams(task_id=task.task_id)
        ),
        mcp_types.CallToolResult,
        request_read_timeout_seconds=None if waits else seconds,
    )


async def _created(
    session: ClientSession, tool: str, arguments: dict[str, object], seconds: float
) -> mcp_types.Task:
    params = mcp_types.CallToolRequestParams(
        name=tool, arguments=arguments, task=mcp_types.TaskMetadata(ttl=_TTL_MS)
    )
    raw = await _send_unchecked(session, mcp_types.CallToolRequest(params=params), seconds)
    created = mcp_types.CreateTaskResult.model_validate(raw, by_name=False)
    return created.task


async def _state(session: ClientSession, task_id: str, seconds: float) -> mcp_types.Task:
    return await session.send_request(
        mcp_types.GetTaskRequest(params=mcp_types.GetTaskRequestParams(task_id=task_id)),
        mcp_types.GetTaskResult,
        request_read_timeout_seconds=seconds,
    )


async def _send_unchecked(
    session: ClientSession, request: mcp_types.CallToolRequest, seconds: float
) -> dict[str, Any]:
    """``request`` as ``send_request`` sends it (its protocol headers stamped), its answer
    unchecked: the SDK would hold a ``CreateTaskResult`` for a malformed tool result."""
    data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
    options: dict[str, Any] = {}
    session._stamp(data, options)  # type: ignore[arg-type]
    options["timeout"] = seconds
    dispatcher: Any = session._dispatcher
    raw: dict[str, Any] = await dispatcher.send_raw_request(
        request.method, data.get("params"), options
    )
    return raw


def _interval(task: mcp_types.Task) -> float:
    if task.poll_interval is None:
        return _DEFAULT_POLL
    return min(max(task.poll_interval / 1000, _MIN_POLL), _MAX_POLL)


async def _cancel(session: ClientSession, task_id: str, seconds: float) -> None:
    await session.send_request(
        mcp_types.CancelTaskRequest(params=mcp_types.CancelTaskRequestParams(task_id=task_id)),
        mcp_types.CancelTaskResult,
        request_read_timeout_seconds=seconds,
    )
