"""What eve offers a real MCP server besides tool calls: its name, roots, progress, and
what it keeps of resources; tools that require tasks are left out."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from eve import __version__
from eve.connections.pool import ConnectionPool
from eve.connections.resources import call_resources, listed_resources_tool
from eve.errors import MCPToolFailed
from eve.manifest import ConnectionEntry
from eve.messages import TextPart
from tests.connections.servers import forked_stdio

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def stdio() -> ConnectionEntry:
    return forked_stdio()


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def pool() -> AsyncIterator[ConnectionPool]:
    pool = ConnectionPool()
    yield pool
    await pool.close()


async def test_the_server_is_told_eves_name_and_the_workspace_as_roots(
    pool: ConnectionPool, stdio: ConnectionEntry, tmp_path: Path
) -> None:
    answer = await pool.call(stdio, "roots_and_client", {}, roots=[tmp_path])
    assert answer.text == f"eve {__version__} {tmp_path.resolve().as_uri()}"
    # roots follow the calls: a server asking again is told the current workspace
    other = tmp_path / "other"
    answer = await pool.call(stdio, "roots_and_client", {}, roots=[other])
    assert answer.text.endswith(other.resolve().as_uri())


async def test_progress_notifications_reach_the_calls_report(
    pool: ConnectionPool, stdio: ConnectionEntry
) -> None:
    seen: list[Any] = []

    async def report(value: Any) -> None:
        seen.append(value)

    answer = await pool.call(stdio, "steps", {"count": 2}, report=report)
    assert answer.text == "2 steps"
    assert seen == [
        {"progress": 1, "total": 2, "message": "step 1"},
        {"progress": 2, "total": 2, "message": "step 2"},
    ]


async def test_resources_keep_their_uri_media_type_and_annotations(
    pool: ConnectionPool,
    stdio: ConnectionEntry,
) -> None:
    answer = await pool.call(stdio, "notes", {})
    assert answer.parts == [
        TextPart(text="[annotations: audience: user; priority: 0.2]\nfor you"),
        TextPart(
            text="[resource link file:///notes/todo.md (text/markdown) named 'todo': "
            "the open items]"
        ),
        TextPart(
            text="[resource file:///notes/done.txt (text/plain; audience: user; "
            "priority: 0.9)]\nall done"
        ),
    ]


async def test_a_tool_that_requires_task_execution_is_left_out(
    pool: ConnectionPool, stdio: ConnectionEntry
) -> None:
    names = {tool.name for tool in await pool.list_tools(stdio)}
    assert "as_task" not in names
    assert {"steps", "notes", "roots_and_client"} <= names


async def test_resources_are_one_built_in_that_lists_and_reads(
    pool: ConnectionPool, stdio: ConnectionEntry
) -> None:
    listed = await listed_resources_tool(pool, stdio, None, taken=set())
    assert listed is not None and (listed.name, listed.kind) == ("calc__resources", "resources")
    listing = await call_resources(pool, stdio, None, {})
    assert json.loads(listing.text) == {
        "resources": [
            {
                "uri": "file:///notes/readme.txt",
                "name": "readme",
                "mimeType": "text/plain",
                "description": "The notes' first page.",
            }
        ]
    }
    read = await call_resources(pool, stdio, None, {"uri": "file:///notes/readme.txt"})
    assert read.text == "[resource file:///notes/readme.txt (text/plain)]\nread me first"
    with pytest.raises(MCPToolFailed, match=r"resources: .*file:///nowhere"):
        await call_resources(pool, stdio, None, {"uri": "file:///nowhere"})
    # a server tool of the same name keeps it: the built-in is left out
    assert await listed_resources_tool(pool, stdio, None, taken={"resources"}) is None


async def test_a_server_asking_with_no_turn_to_answer_is_refused_not_answered(
    pool: ConnectionPool,
    stdio: ConnectionEntry,
) -> None:
    # a call made outside a turn (no ``asks``): nobody could answer, so nothing is made up
    answer = await pool.call(stdio, "ask_person", {})
    assert answer.text.startswith("refused: "), answer.text
    assert "no tool call of a turn is running on the connection" in answer.text
