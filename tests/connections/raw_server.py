"""A stdio MCP server written by hand (JSON-RPC lines), for what the SDK's server API will not
send: any error code, a malformed result, a crash after the side effect, stderr floods.

``python raw_server.py COUNT_FILE``: ``count``, ``count_then_die`` and ``error`` append a line
to COUNT_FILE (their side effect), so a test can count how often a call really ran;
``bad-listing`` after it makes the tool listing malformed.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

TOOLS = ["error", "malformed", "count", "count_then_die", "environment", "stderr_flood"]
COUNT_FILE = sys.argv[1] if len(sys.argv) > 1 else os.devnull


def tool(name: str) -> dict[str, Any]:
    return {"name": name, "description": f"The {name} tool.", "inputSchema": {"type": "object"}}


def count() -> None:
    with open(COUNT_FILE, "a") as file:
        file.write("ran\n")


def text(value: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}]}


def answer(request: dict[str, Any]) -> dict[str, Any] | None:
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "eve-raw-server", "version": "1"},
        }
    if method == "tools/list":
        if "bad-listing" in sys.argv:
            return {"tools": [{"name": "no-schema"}]}  # inputSchema is required
        return {"tools": [tool(name) for name in TOOLS]}
    if method != "tools/call":
        raise LookupError(method)
    name, arguments = params["name"], params.get("arguments") or {}
    if name == "error":
        count()  # a side effect, then the error: a retry would show as a second line
        raise RpcError(arguments["code"], arguments.get("message", "the server's own error"))
    if name == "malformed":
        return {"content": [{"type": "text"}]}  # a text block with no text
    if name == "count":
        count()
        return text("counted")
    if name == "count_then_die":
        count()
        os._exit(7)
    if name == "environment":
        return text(json.dumps(sorted(os.environ)))
    if name == "stderr_flood":
        line = arguments.get("line", "noise")
        for _ in range(int(arguments.get("lines", 1000))):
            sys.stderr.write(line + "\n")
        sys.stderr.flush()
        return text("flooded")
    raise LookupError(name)


class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def main() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        if "id" not in request:
            continue  # a notification
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request["id"]}
        try:
            reply["result"] = answer(request)
        except RpcError as error:
            reply["error"] = {"code": error.code, "message": str(error)}
        except LookupError as error:
            reply["error"] = {"code": -32601, "message": f"no such method: {error}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
