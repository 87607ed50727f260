"""An MCP server for the tests, written with the SDK's server API: ``stdio`` or ``http PORT``."""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer(name="eve-test-server")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def fail(reason: str) -> str:
    """Always fails, with the reason given."""
    raise ToolError(f"failed on purpose: {reason}")


@server.tool()
def hang(seconds: float = 3600.0) -> str:
    """Sleeps for a long time before answering."""
    time.sleep(seconds)
    return "woke"


@server.tool()
def process_id() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def header(name: str, ctx: Context) -> str:
    """The value of a request header the client sent (HTTP only)."""
    request = ctx.request_context.request
    return "" if request is None else str(request.headers.get(name, ""))


@server.tool()
def exit_now() -> str:
    """Ends the server's process at once (a crash, as the client sees it)."""
    os._exit(3)


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
