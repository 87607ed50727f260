"""The connection pool against real MCP servers: stdio and Streamable HTTP on loopback."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import AsyncIterator, Iterator

import msgspec
import pytest
import pytest_asyncio

from eve.connections import define_mcp_connection, from_env
from eve.connections.pool import ConnectionPool
from eve.errors import MCPCallInterrupted, MCPCallTimedOut, MCPServerUnavailable, MCPToolFailed
from eve.manifest import ConnectionEntry
from tests.connections.servers import STDIO_COMMAND, alive, entry, free_port, http_server, wait_gone

pytestmark = pytest.mark.asyncio(loop_scope="module")

STDIO = entry(define_mcp_connection(description="Test tools.", command=STDIO_COMMAND))
#: every stdio server process the tests saw; none may outlive the module
seen_pids: set[int] = set()


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def pool() -> AsyncIterator[ConnectionPool]:
    pool = ConnectionPool()
    yield pool
    await pool.close()
    left = [pid for pid in seen_pids if not wait_gone(pid)]
    assert left == [], f"MCP server process groups left running: {left}"


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    with http_server() as url:
        yield url


async def server_pid(pool: ConnectionPool, connection: ConnectionEntry) -> int:
    pid = int((await pool.call(connection, "process_id", {})).text)
    seen_pids.add(pid)
    return pid


async def test_lists_the_servers_tools_with_their_schemas(pool: ConnectionPool) -> None:
    tools = {tool.name: tool for tool in await pool.list_tools(STDIO)}
    assert {"add", "fail", "hang", "process_id", "exit_now"} <= set(tools)
    assert tools["add"].description == "Add two integers."
    assert tools["add"].input_schema["required"] == ["a", "b"]


async def test_a_call_answers_and_reuses_the_one_server_process(pool: ConnectionPool) -> None:
    first = await server_pid(pool, STDIO)
    assert (await pool.call(STDIO, "add", {"a": 2, "b": 3})).text == "5"
    assert await server_pid(pool, STDIO) == first
    assert os.getpgid(first) == first, "a stdio server leads a process group of its own"


async def test_a_server_error_is_a_named_error_with_the_servers_message(
    pool: ConnectionPool,
) -> None:
    with pytest.raises(MCPToolFailed, match="failed on purpose: because") as caught:
        await pool.call(STDIO, "fail", {"reason": "because"})
    assert (caught.value.connection, caught.value.tool) == ("calc", "fail")


async def test_a_hanging_tool_times_out_and_the_connection_still_serves(
    pool: ConnectionPool,
) -> None:
    impatient = entry(
        define_mcp_connection(
            description="Test tools.", command=STDIO_COMMAND, call_timeout_seconds=1.0
        ),
        name="impatient",
    )
    # the other calls have a second, which a loaded machine does not take; the hang outlasts
    # the timeout by 1.5 s, so the server cannot answer in time
    await server_pid(pool, impatient)
    with pytest.raises(MCPCallTimedOut, match=r"'hang' did not answer within 1s") as caught:
        await pool.call(impatient, "hang", {"seconds": 2.5})
    assert caught.value.seconds == 1.0
    assert (await pool.call(impatient, "add", {"a": 1, "b": 1})).text == "2"


async def test_a_killed_server_is_reconnected_for_the_next_call(pool: ConnectionPool) -> None:
    before = await server_pid(pool, STDIO)
    os.kill(before, signal.SIGKILL)
    assert wait_gone(before)
    # a call made before the pool saw the end of its stdout could have reached the server,
    # so it is not sent again; once the end is seen, the next call starts a new server
    with contextlib.suppress(MCPCallInterrupted):
        await pool.call(STDIO, "add", {"a": 20, "b": 22})
    assert (await pool.call(STDIO, "add", {"a": 20, "b": 22})).text == "42"
    assert await server_pid(pool, STDIO) != before


async def test_a_server_exiting_under_a_call_is_not_called_again(pool: ConnectionPool) -> None:
    before = await server_pid(pool, STDIO)
    with pytest.raises(MCPCallInterrupted, match="not called again"):
        await pool.call(STDIO, "exit_now", {})
    assert wait_gone(before)
    assert (await pool.call(STDIO, "add", {"a": 1, "b": 2})).text == "3"


async def test_a_command_that_does_not_start_is_unavailable(pool: ConnectionPool) -> None:
    missing = entry(
        define_mcp_connection(description="Nothing.", command=["/nonexistent/eve-mcp-server"]),
        name="missing",
    )
    with pytest.raises(MCPServerUnavailable, match=r"'missing'.*could not connect"):
        await pool.list_tools(missing)


async def test_closing_the_pool_ends_every_server_process_group() -> None:
    pool = ConnectionPool()
    pid = await server_pid(pool, STDIO)
    assert alive(pid)
    await pool.close()
    assert wait_gone(pid)


async def test_http_tools_are_listed_and_called(pool: ConnectionPool, http_url: str) -> None:
    remote = entry(define_mcp_connection(description="Remote.", url=http_url), name="remote")
    assert "add" in {tool.name for tool in await pool.list_tools(remote)}
    assert (await pool.call(remote, "add", {"a": 4, "b": 5})).text == "9"


async def test_http_headers_come_from_the_environment_and_get_token(
    pool: ConnectionPool, http_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVE_TEST_MCP_KEY", "key-from-env")
    definition = define_mcp_connection(
        description="Remote.",
        url=http_url,
        headers={"X-Api-Key": from_env("EVE_TEST_MCP_KEY")},
        get_token=lambda: "token-from-callable",
    )
    remote = entry(definition, name="keyed")
    token = definition.get_token
    assert (await pool.call(remote, "header", {"name": "x-api-key"}, token)).text == (
        "key-from-env"
    )
    authorization = await pool.call(remote, "header", {"name": "authorization"}, token)
    assert authorization.text == "Bearer token-from-callable"
    assert "key-from-env" not in msgspec.json.encode(remote).decode()


async def test_an_unset_header_variable_is_named_not_sent(pool: ConnectionPool) -> None:
    unset = entry(
        define_mcp_connection(
            description="Remote.",
            url=f"http://127.0.0.1:{free_port()}/mcp",
            headers={"X-Api-Key": from_env("EVE_TEST_MCP_UNSET")},
        ),
        name="unset",
    )
    with pytest.raises(MCPServerUnavailable, match="EVE_TEST_MCP_UNSET, which is not set"):
        await pool.list_tools(unset)


async def test_an_http_server_that_is_down_is_unavailable_within_the_timeout(
    pool: ConnectionPool,
) -> None:
    down = entry(
        define_mcp_connection(
            description="Down.",
            url=f"http://127.0.0.1:{free_port()}/mcp",
            connect_timeout_seconds=2,
        ),
        name="down",
    )
    with pytest.raises(MCPServerUnavailable, match="'down'"):
        await pool.call(down, "add", {"a": 1, "b": 2})
