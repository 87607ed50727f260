"""An MCP server with task-augmented tools (protocol 2025-11-25), by hand: the SDK's server
API has no tasks.

``python task_server.py LOG`` serves stdio; ``serve_http(log)`` serves Streamable HTTP
(plain JSON answers) from a thread of the test, so its tasks outlive an eve that stops.
``sum`` requires a task and completes after two polls of ``tasks/get``; ``forever``
(optional support) stays ``working`` until cancelled. Each ``tools/call``, ``tasks/get``,
``tasks/result`` and ``tasks/cancel`` appends a line to the log, so a test reads what the
client did.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

LOG = sys.argv[1] if __name__ == "__main__" else ""
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


def reply_to(request: dict[str, Any]) -> dict[str, Any]:
    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request["id"]}
    try:
        reply["result"] = answer(request["method"], request.get("params") or {})
    except LookupError as error:
        reply["error"] = {"code": -32601, "message": f"not here: {error}"}
    return reply


def main() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        if "id" in request:  # else a notification
            sys.stdout.write(json.dumps(reply_to(request)) + "\n")
            sys.stdout.flush()


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if "id" not in request:
            self.send_response(202)
            self.end_headers()
            return
        body = json.dumps(reply_to(request)).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # no stream of the server's own: plain JSON answers only
        self.send_response(405)
        self.end_headers()

    do_DELETE = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serve_http(log_path: str) -> Iterator[str]:
    """The server on a free port in a thread of this process; its URL."""
    global LOG
    LOG = log_path
    tasks.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    main()
