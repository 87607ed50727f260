"""An MCP server (stdio) whose tools ask the client: a form (elicitation), the client's model
(sampling). ``python asking_server.py COUNTED`` appends a line to the file COUNTED each time
a tool starts, so a test can count the calls the server really got."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import SamplingMessage, TextContent
from pydantic import BaseModel

server = MCPServer(name="eve-asking-server")
COUNTED = Path(sys.argv[1]) if len(sys.argv) > 1 else None


def _started(tool: str) -> None:
    if COUNTED is not None:
        with COUNTED.open("a") as out:
            out.write(tool + "\n")


class Booking(BaseModel):
    name: str
    nights: int
    room: Literal["single", "double"]


@server.tool()
async def book(ctx: Context) -> str:
    """Books a room, asking the person for the details."""
    _started("book")
    try:
        answer = await ctx.elicit("Who is staying, and how long?", Booking)
    except Exception as error:  # the client's refusal, as the server sees it
        return f"refused: {type(error).__name__}: {error}"
    if answer.action != "accept":
        return f"not booked: {answer.action}"
    data = answer.data
    return f"booked {data.room} for {data.name}, {data.nights} nights"


@server.tool()
async def haiku(topic: str, ctx: Context) -> str:
    """Asks the client's model for a haiku about ``topic``."""
    _started("haiku")
    try:
        result = await ctx.request_context.session.create_message(
            messages=[
                SamplingMessage(role="user", content=TextContent(text=f"A haiku about {topic}"))
            ],
            max_tokens=5000,
            system_prompt="You write haiku.",
        )
    except Exception as error:
        return f"refused: {type(error).__name__}: {error}"
    content = result.content
    text = content.text if isinstance(content, TextContent) else repr(content)
    return f"{result.model} ({result.stop_reason}): {text}"


if __name__ == "__main__":
    server.run("stdio")
