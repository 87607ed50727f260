"""A stdio MCP server with task-augmented tools (protocol 2025-11-25), by hand: the SDK's
server API has no tasks.

``python task_server.py LOG``: ``sum`` requires a task and completes after two polls of
``tasks/get``; ``forever`` (optional support) stays ``working`` until cancelled. Each
``tools/call``, ``tasks/get``, ``tasks/result`` and ``tasks/cancel`` appends a line to LOG,
so a test reads what the client did.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from typing import Any

LOG = sys.argv[1]
tasks: dict[str, dict[str, Any]] = {}


def log(line: str) -> None:
    with open(LOG, "a") as file:
        file.write(line + "\n")


def tool(name: str, support: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"The {name} tool, run as a task.",
        "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}}},
        "execution": {"taskSupport": support},
    }


def state(task_id: str) -> dict[str, Any]:
    task = tasks[task_id]
    now = datetime.now(UTC).isoformat()
    return {
        "taskId": task_id,
        "status": task["status"],
        "statusMessage": f"{task['polls']} polls",
        "createdAt": now,
        "lastUpdatedAt": now,
        "ttl": 60000,
        "pollInterval": 10,
    }


def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
    if method == "initialize":
        return {
            "protocolVersion": "2025-11-25",
            "capabilities": {
                "tools": {},
                "tasks": {"requests": {"tools": {"call": {}}}, "cancel": {}},
            },
            "serverInfo": {"name": "eve-task-server", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": [tool("sum", "required"), tool("forever", "optional")]}
    if method == "tools/call":
        log(f"call {params['name']} task={'task' in params}")
        if "task" not in params:
            raise LookupError("call these tools as tasks")
        task_id = f"task-{len(tasks) + 1}"
        tasks[task_id] = {
            "status": "working",
            "polls": 0,
            "name": params["name"],
            "a": params["arguments"]["a"],
        }
        return {"task": state(task_id)}
    task_id = params["taskId"]
    task = tasks[task_id]
    log(f"{method} {task_id}")
    if method == "tasks/get":
        task["polls"] += 1
        if task["name"] == "sum" and task["polls"] >= 2:
            task["status"] = "completed"
        return state(task_id)
    if method == "tasks/result":
        return {"content": [{"type": "text", "text": f"sum={task['a'] + 1}"}]}
    if method == "tasks/cancel":
        task["status"] = "cancelled"
        return state(task_id)
    raise LookupError(method)


def main() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        if "id" not in request:
            continue  # a notification
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request["id"]}
        try:
            reply["result"] = answer(request["method"], request.get("params") or {})
        except LookupError as error:
            reply["error"] = {"code": -32601, "message": f"not here: {error}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
