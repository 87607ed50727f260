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
    Annotations,
    AudioContent,
    BlobResourceContents,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
    Tool,
    ToolExecution,
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


@server.tool()
async def steps(count: int, ctx: Context) -> str:
    """Reports ``count`` progress notifications, then answers."""
    for done in range(1, count + 1):
        await ctx.report_progress(done, count, f"step {done}")
    return f"{count} steps"


@server.tool()
async def roots_and_client(ctx: Context) -> str:
    """The client's roots (asked of the client) and the name and version it gave."""
    session = ctx.request_context.session
    listed = await session.list_roots()
    params = session.client_params
    info = "" if params is None else f"{params.client_info.name} {params.client_info.version}"
    return " ".join([info, *(str(root.uri) for root in listed.roots)])


@server.tool()
async def ask_person(ctx: Context) -> str:
    """Asks the client's user for a name (elicitation), and says what came back."""
    from pydantic import BaseModel

    class Name(BaseModel):
        name: str

    try:
        answer = await ctx.elicit("Your name?", Name)
    except Exception as error:  # the client's refusal, as the server sees it
        return f"refused: {type(error).__name__}: {error}"
    return f"answered: {answer.action}"


@server.tool()
def notes() -> list[ContentBlock]:
    """A note for the user, a resource link and an embedded text resource, annotated."""
    return [
        TextContent(
            type="text", text="for you", annotations=Annotations(audience=["user"], priority=0.2)
        ),
        ResourceLink(
            type="resource_link",
            uri="file:///notes/todo.md",
            name="todo",
            mime_type="text/markdown",
            description="the open items",
        ),
        EmbeddedResource(
            type="resource",
            resource=TextResourceContents(
                uri="file:///notes/done.txt", mime_type="text/plain", text="all done"
            ),
            annotations=Annotations(audience=["user"], priority=0.9),
        ),
    ]


@server.tool()
def as_task() -> str:
    """Listed as requiring task-augmented execution (see ``list_tools`` below)."""
    return "not as a task"


@server.resource("file:///notes/readme.txt", name="readme", mime_type="text/plain")
def readme() -> str:
    """The notes' first page."""
    return "read me first"


_listed = server.list_tools


async def list_tools() -> list[Tool]:
    """The tools, ``as_task`` marked ``taskSupport: required`` (the decorator has no way)."""
    return [
        tool.model_copy(update={"execution": ToolExecution(task_support="required")})
        if tool.name == "as_task"
        else tool
        for tool in await _listed()
    ]


server.list_tools = list_tools  # type: ignore[method-assign]


if __name__ == "__main__":
    if "without-add" in sys.argv:
        # a server restarted with another tool set (its clients' listings are stale)
        server.remove_tool("add")
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
