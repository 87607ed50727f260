"""The pool's recovery and isolation rules against real servers: error codes classified by
origin, tools called at most once, ended sessions renewed, hanging servers isolated, declared
secrets redacted, a stdio server's environment allow-listed."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from eve._redact import REDACTED, redact
from eve.connections import define_mcp_connection, from_env
from eve.connections.pool import ConnectionPool
from eve.connections.rpc_errors import session_closed
from eve.errors import (
    MCPCallInterrupted,
    MCPResultMalformed,
    MCPServerError,
    MCPServerUnavailable,
    MCPToolsChanged,
)
from eve.manifest import ConnectionEntry
from tests.connections.servers import entry, free_port, http_server

pytestmark = pytest.mark.asyncio(loop_scope="module")

RAW_SERVER = Path(__file__).with_name("raw_server.py")


@pytest.fixture(scope="module")
def counted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The file the raw server's side effects append to."""
    return tmp_path_factory.mktemp("mcp") / "side-effects"


@pytest.fixture(scope="module")
def raw(counted: Path) -> ConnectionEntry:
    command = [sys.executable, str(RAW_SERVER), str(counted)]
    return entry(define_mcp_connection(description="Raw.", command=command), name="raw")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def pool() -> AsyncIterator[ConnectionPool]:
    pool = ConnectionPool()
    yield pool
    await pool.close()


def runs(counted: Path) -> int:
    return len(counted.read_text().splitlines()) if counted.exists() else 0


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        (-32700, "parse error"),
        (-32600, "invalid request"),
        (-32601, "method not found"),
        (-32602, "invalid params"),
        (-32603, "internal error"),
        (-32000, "server-defined"),  # the SDK's own code for a closed connection
        (-32001, "server-defined"),  # the SDK's own code for a timeout
        (-32099, "server-defined"),
        (42, "application-defined"),
    ],
)
async def test_every_error_code_the_server_sends_is_the_servers_and_not_retried(
    pool: ConnectionPool, raw: ConnectionEntry, counted: Path, code: int, kind: str
) -> None:
    before = runs(counted)
    with pytest.raises(MCPServerError, match=rf"error {code} \({kind}\): the server's own"):
        await pool.call(raw, "error", {"code": code})
    assert runs(counted) == before + 1, "the call ran once: no reconnect, no second call"
    assert (await pool.call(raw, "count", {})).text == "counted"


async def test_a_server_dying_mid_call_is_not_called_again(
    pool: ConnectionPool, raw: ConnectionEntry, counted: Path
) -> None:
    before = runs(counted)
    with pytest.raises(MCPCallInterrupted, match="not called again") as caught:
        await pool.call(raw, "count_then_die", {})
    assert caught.value.tool == "count_then_die"
    assert runs(counted) == before + 1
    # the next call finds the session closed before it sends anything: a new server
    assert (await pool.call(raw, "count", {})).text == "counted"
    assert runs(counted) == before + 2


async def test_a_malformed_result_is_a_named_error(
    pool: ConnectionPool, raw: ConnectionEntry
) -> None:
    with pytest.raises(MCPResultMalformed, match=r"'malformed' answered with no valid tool"):
        await pool.call(raw, "malformed", {})


async def test_a_malformed_listing_is_a_named_error(pool: ConnectionPool, counted: Path) -> None:
    command = [sys.executable, str(RAW_SERVER), str(counted), "bad-listing"]
    bad = entry(define_mcp_connection(description="Raw.", command=command), name="badlist")
    with pytest.raises(MCPServerUnavailable, match=r"listing is malformed \(tools\.0\.inputSchema"):
        await pool.list_tools(bad)


async def test_a_stdio_server_sees_only_its_declared_environment(
    pool: ConnectionPool, counted: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-not-for-mcp-servers-000")
    monkeypatch.setenv("EVE_TEST_MCP_PRIVATE", "eve-private-value")
    monkeypatch.setenv("EVE_TEST_MCP_DECLARED", "declared-secret-value")
    command = [sys.executable, str(RAW_SERVER), str(counted)]
    definition = define_mcp_connection(
        description="Raw.", command=command, env={"DECLARED": from_env("EVE_TEST_MCP_DECLARED")}
    )
    names = json.loads((await pool.call(entry(definition, "envd"), "environment", {})).text)
    assert "DECLARED" in names and "PATH" in names
    assert not {"OPENAI_API_KEY", "EVE_TEST_MCP_PRIVATE"} & set(names)
    # a value the connection declared from the environment is a secret from now on
    assert redact("echoed: declared-secret-value") == f"echoed: {REDACTED}"


async def test_a_server_hanging_at_connect_fails_its_callers_together_and_no_one_else(
    pool: ConnectionPool, raw: ConnectionEntry
) -> None:
    await pool.call(raw, "count", {})
    hanging = entry(
        define_mcp_connection(
            description="Hangs.",
            command=[sys.executable, "-c", "import time; time.sleep(60)"],
            connect_timeout_seconds=1,
        ),
        name="hanging",
    )
    callers = [asyncio.ensure_future(pool.list_tools(hanging)) for _ in range(4)]
    await asyncio.sleep(0)  # every caller is now waiting on the connect
    # another connection answers while that server has not
    assert (await pool.call(raw, "count", {})).text == "counted"
    assert not any(caller.done() for caller in callers)
    failed = await asyncio.gather(*callers, return_exceptions=True)
    assert all(isinstance(error, MCPServerUnavailable) for error in failed)
    assert len({id(error) for error in failed}) == 1, "one connect attempt, not one each"
    # the next turn's call backs off: it fails at once, with no new attempt
    attempt = pool._servers[hanging.logical_path].connecting
    with pytest.raises(MCPServerUnavailable, match=r"no answer within 1s \(not retried for"):
        await pool.call(hanging, "anything", {})
    assert pool._servers[hanging.logical_path].connecting is attempt


async def test_a_session_the_http_server_ended_is_renewed_and_the_call_sent_once(
    pool: ConnectionPool,
) -> None:
    port = free_port()
    remote = entry(define_mcp_connection(description="Remote.", url=f"http://127.0.0.1:{port}/mcp"))
    with http_server(port):
        first = int((await pool.call(remote, "process_id", {})).text)
        schema = {tool.name: tool.input_schema for tool in await pool.list_tools(remote)}
    with http_server(port):  # a restart: the old session id is unknown (404)
        # the new session lists `add` as the turn's recorded listing has it: sent once
        assert (await pool.call(remote, "add", {"a": 1, "b": 2}, None, schema["add"])).text == "3"
        assert int((await pool.call(remote, "process_id", {})).text) != first
    with http_server(port, "without-add"):
        stale = {"type": "object", "properties": {"pid": {"type": "integer"}}}
        with pytest.raises(MCPToolsChanged, match="'process_id' differently; it was not called"):
            await pool.call(remote, "process_id", {}, None, stale)
    assert "add" not in {tool.name for tool in pool_tools(pool, remote)}


def pool_tools(pool: ConnectionPool, connection: ConnectionEntry) -> list[object]:
    listed = pool._servers[connection.logical_path].listed  # the re-validated listing
    assert listed is not None
    return list(listed)


async def test_secret_headers_and_tokens_join_the_redaction_set(
    pool: ConnectionPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVE_TEST_MCP_HEADER", "header-secret-from-env")
    with http_server() as url:
        definition = define_mcp_connection(
            description="Remote.",
            url=url,
            headers={"X-Api-Key": from_env("EVE_TEST_MCP_HEADER", prefix="Key ")},
            get_token=lambda: "token-secret-from-callable",
        )
        remote = entry(definition, name="echo")
        token = definition.get_token
        echoed = await pool.call(remote, "header", {"name": "x-api-key"}, token)
        bearer = await pool.call(remote, "header", {"name": "authorization"}, token)
    assert redact(echoed.text) == f"Key {REDACTED}"
    assert redact(bearer.text) == f"Bearer {REDACTED}"


async def test_a_killed_stdio_server_is_noticed_before_the_next_call(
    pool: ConnectionPool, raw: ConnectionEntry, counted: Path
) -> None:
    await pool.call(raw, "count", {})
    server = pool._servers[raw.logical_path]
    assert server.session is not None
    session = server.session
    with pytest.raises(MCPCallInterrupted):
        await pool.call(raw, "count_then_die", {})
    assert session_closed(session)
    before = runs(counted)
    assert (await pool.call(raw, "count", {})).text == "counted"
    assert runs(counted) == before + 1
