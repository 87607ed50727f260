"""The reference "everything" MCP server (TypeScript SDK, from npm) through eve's pool: its
environment allow-listed over stdio, and its ended session renewed over Streamable HTTP (it
answers 400 about the session id where the spec says 404)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from eve.connections import define_mcp_connection
from eve.connections.pool import ConnectionPool
from tests.connections.servers import entry, free_port, serving
from tests.npm import npm_ci

pytestmark = pytest.mark.asyncio(loop_scope="module")

PACKAGE = Path(__file__).with_name("everything")
SERVER = PACKAGE / "node_modules" / ".bin" / "mcp-server-everything"


@pytest.fixture(scope="module", autouse=True)
def installed() -> None:
    npm_ci(PACKAGE, needed_for='the reference "everything" MCP server')


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def pool() -> AsyncIterator[ConnectionPool]:
    pool = ConnectionPool()
    yield pool
    await pool.close()


async def test_the_stdio_server_sees_no_provider_key(
    pool: ConnectionPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-not-for-mcp-servers-0000")
    command = ["node", str(SERVER), "stdio"]
    everything = entry(define_mcp_connection(description="Ref.", command=command), "ref")
    assert (await pool.call(everything, "echo", {"message": "hi"})).text == "Echo: hi"
    environment = json.loads((await pool.call(everything, "get-env", {})).text)
    assert "PATH" in environment
    assert "ANTHROPIC_API_KEY" not in environment


async def test_a_restarted_http_server_gets_a_new_session(pool: ConnectionPool) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    everything = entry(define_mcp_connection(description="Ref.", url=url), "refhttp")

    def start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            ["node", str(SERVER), "streamableHttp"],
            env={"PATH": "/usr/local/bin:/usr/bin:/bin", "PORT": str(port)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    with serving(start(), port):
        assert (await pool.call(everything, "echo", {"message": "one"})).text == "Echo: one"
    with serving(start(), port):  # the old session id is unknown: 400 "no valid session ID"
        assert (await pool.call(everything, "echo", {"message": "two"})).text == "Echo: two"
