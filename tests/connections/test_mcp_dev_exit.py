"""``eve dev`` ends its stdio MCP servers' whole process groups when it exits."""

from __future__ import annotations

import uuid

from tests.cli.test_dev_cli import read_until, send, start
from tests.conftest import AppFactory
from tests.connections.servers import STDIO_COMMAND, servers_tagged, wait_until_gone

CONNECTION = """
from eve.connections import define_mcp_connection

default = define_mcp_connection(
    description="Arithmetic on a test server.", command={command!r}, tools=["add"]
)
"""


def test_eve_dev_exit_ends_the_servers_it_started(make_app: AppFactory) -> None:
    marker = f"eve-test-{uuid.uuid4().hex}"
    # the server starts a child in its group that ignores the end of its stdin
    command = [*STDIO_COMMAND, "stdio", "with-child", marker]
    root = make_app(
        {
            "agent/agent.py": "from eve import define_agent\n"
            "default = define_agent(model='offline/test')\n",
            "agent/connections/calc.py": CONNECTION.format(command=command),
        }
    )
    process = start(root)
    try:
        read_until(process, "you › ")
        send(process, "hello")  # the turn lists the connection's tools: its server starts
        answer = read_until(process, "you › ")
        assert "eve__search" in answer, answer  # the catalog holds calc__add
        assert len(servers_tagged(marker)) == 2, "the turn started the server and its child"
        assert process.stdin is not None
        process.stdin.close()  # end of input: eve dev exits
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    assert wait_until_gone(marker) == []
