"""An MCP server for the tests, written with the SDK's server API: ``stdio`` or ``http PORT``."""

from __future__ import annotations

import atexit
import base64
import gc
import os
import subprocess
import sys
import time

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import (
    AudioContent,
    BlobResourceContents,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    TextContent,
)

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


#: a 1x1 PNG, and a one-line "PDF" (what the model is sent is the bytes, not a parse)
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63f8cfc0f01f0005000201a5f6e5e10000000049454e44ae426082"
)
PDF = b"%PDF-1.4 eve test"


@server.tool()
def chart() -> list[ContentBlock]:
    """A chart, its report and a sound: an image, an embedded PDF and audio."""
    return [
        TextContent(type="text", text="the chart:"),
        ImageContent(type="image", data=base64.b64encode(PIXEL).decode(), mime_type="image/png"),
        EmbeddedResource(
            type="resource",
            resource=BlobResourceContents(
                uri="file:///reports/q3.pdf",
                mime_type="application/pdf",
                blob=base64.b64encode(PDF).decode(),
            ),
        ),
        AudioContent(type="audio", data="AAAA", mime_type="audio/wav"),
    ]


@server.tool()
def big(chars: int) -> str:
    """A text of ``chars`` characters (``0123456789`` over and over)."""
    return ("0123456789" * (chars // 10 + 1))[:chars]


@server.tool()
def exit_now() -> str:
    """Ends the server's process at once (a crash, as the client sees it)."""
    os._exit(3)


if __name__ == "__main__":
    # the client gives a server 2 s to exit once its stdin closes; the interpreter's last
    # garbage collection over the SDK's models took most of that on a loaded machine
    atexit.register(gc.freeze)
    if "with-child" in sys.argv:
        # a helper process in the server's group that outlives the server's stdin, as a
        # server's own workers would: only ending the whole group ends it
        subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(600)", *sys.argv[1:]],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
