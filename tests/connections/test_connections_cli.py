"""``eve info`` lists connections offline; ``eve connections list`` connects and lists tools."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from eve.cli import main
from tests.connections.servers import forked_stdio_source, free_port

REPO = Path(__file__).resolve().parents[2]

CALC = """
from eve.connections import define_mcp_connection

default = define_mcp_connection(
    description="Arithmetic.", {server}, tools=["add", "process_id"]
)
"""
DOWN = f"""
from eve.connections import define_mcp_connection

default = define_mcp_connection(
    description="Down.", url="http://127.0.0.1:{free_port()}/mcp", connect_timeout_seconds=2
)
"""


ECHO = '''
from eve.tools import tool


@tool
def echo(text: str) -> str:
    """Say it back."""
    return text
'''


def test_info_lists_and_connections_list_connects(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    (agent / "connections").mkdir(parents=True)
    (agent / "instructions.md").write_text("Help.\n")
    (agent / "connections" / "calc.py").write_text(CALC.format(server=forked_stdio_source()))
    (agent / "connections" / "down.py").write_text(DOWN)
    runner = CliRunner()
    root = ["--app-root", str(tmp_path)]
    assert runner.invoke(main, [*root, "compile"]).exit_code == 0
    info = runner.invoke(main, [*root, "info"])
    assert "connection calc (stdio " in info.output and "catalog): Arithmetic." in info.output
    listed = runner.invoke(main, [*root, "connections", "list"])
    # a server that is down fails the listing: usable as a check in CI
    assert listed.exit_code == 1, listed.output
    assert "connection calc: 2 tool(s)\n  calc__add(a, b): Add two integers." in listed.stdout
    assert "connection down: MCPServerUnavailable: connection 'down'" in listed.stdout
    assert "eve: 1 connection(s) could not be listed" in listed.stderr
    as_json = runner.invoke(main, [*root, "connections", "list", "--json"])
    assert as_json.exit_code == 1
    [calc, down] = json.loads(as_json.stdout)["nodes"]["__root__"]
    assert [t["tool"] for t in calc["tools"]] == ["add", "process_id"]
    assert down["error"].startswith("MCPServerUnavailable")
    (agent / "connections" / "down.py").unlink()
    assert runner.invoke(main, [*root, "connections", "list"]).exit_code == 0  # all listed


def test_a_connection_down_at_run_time_is_said_before_the_search_it_fails(
    tmp_path: Path,
) -> None:
    """The catalog's servers are listed when the turn first searches it: the server's own
    error comes then, before the search's answer and the failed call that follow from it."""
    agent = tmp_path / "agent"
    (agent / "connections").mkdir(parents=True)
    (agent / "instructions.md").write_text("Help.\n")
    (agent / "agent.py").write_text(
        "from eve import define_agent\ndefault = define_agent(model='offline/test')\n"
    )
    (agent / "connections" / "down.py").write_text(DOWN)
    (agent / "tools").mkdir()
    (agent / "tools" / "echo.py").write_text(ECHO)
    ran = CliRunner().invoke(main, ["--app-root", str(tmp_path), "run", "hello"])
    assert ran.exit_code == 0, ran.output
    lines = [line.strip() for line in ran.stderr.splitlines()]
    said = [i for i, line in enumerate(lines) if line.startswith("! connection down failed")]
    searched = [i for i, line in enumerate(lines) if line.startswith("← eve__search")]
    called = [i for i, line in enumerate(lines) if line.startswith("✗ eve__tool")]
    echoed = [i for i, line in enumerate(lines) if line.startswith("← echo")]
    assert said and "MCPServerUnavailable" in lines[said[0]], ran.stderr
    assert searched and called and echoed, ran.stderr
    assert echoed[0] < said[0] < searched[0] < called[0], ran.stderr


V1_SERVER = """
from mcp.server.fastmcp import FastMCP  # mcp 1.x: renamed MCPServer in mcp 2

server = FastMCP("calc")
server.run()
"""


def test_a_server_that_dies_at_start_is_explained_by_its_own_last_line(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    (agent / "connections").mkdir(parents=True)
    (agent / "instructions.md").write_text("Help.\n")
    (tmp_path / "v1_server.py").write_text(V1_SERVER)
    server = str(tmp_path / "v1_server.py")
    (agent / "connections" / "old.py").write_text(
        "from eve.connections import define_mcp_connection\n"
        f"default = define_mcp_connection(description='Old.', command=['python', {server!r}])\n"
    )
    listed = CliRunner().invoke(main, ["--app-root", str(tmp_path), "connections", "list"])
    assert listed.exit_code == 1
    line = next(line for line in listed.stdout.splitlines() if line.startswith("connection old"))
    assert "the server said: ModuleNotFoundError: No module named 'mcp.server.fastmcp'" in line
    assert "another major version of the mcp SDK" in line


def test_a_stdio_server_runs_in_the_app_root_wherever_eve_started(tmp_path: Path) -> None:
    """``command=["python", "units_server.py"]`` is relative to the app root, as the example
    agent's connection is, also under ``eve -C APP`` from another directory."""
    agent = tmp_path / "agent"
    (agent / "connections").mkdir(parents=True)
    (agent / "instructions.md").write_text("Help.\n")
    shutil.copy(REPO / "examples" / "units_server.py", tmp_path / "units_server.py")
    (agent / "connections" / "units.py").write_text(
        "from eve.connections import define_mcp_connection\n"
        "default = define_mcp_connection(description='Units.', "
        "command=['python', 'units_server.py'])\n"
    )
    assert Path.cwd() != tmp_path
    listed = CliRunner().invoke(main, ["--app-root", str(tmp_path), "connections", "list"])
    assert listed.exit_code == 0, listed.output
    assert "connection units: 1 tool(s)" in listed.stdout


#: a server with one tool when it runs as a fork of the tests' fork server (eve imported
#: before the script ran), none when it runs as a fresh interpreter
WHERE_SERVER = """
import sys
from mcp.server.mcpserver import MCPServer

server = MCPServer(name="where")
if "eve.cli.main" in sys.modules:

    @server.tool()
    def forked() -> str:
        return "forked"

server.run()
"""


def where_app(root: Path) -> Path:
    (root / "agent" / "connections").mkdir(parents=True)
    (root / "agent" / "instructions.md").write_text("Help.\n")
    (root / "where_server.py").write_text(WHERE_SERVER)
    (root / "agent" / "connections" / "where.py").write_text(
        "from eve.connections import define_mcp_connection\n"
        "default = define_mcp_connection(description='Where.', "
        "command=['python', 'where_server.py'])\n"
    )
    return root


def test_a_python_stdio_server_is_a_fresh_interpreter(tmp_path: Path) -> None:
    listed = CliRunner().invoke(main, ["-C", str(where_app(tmp_path)), "connections", "list"])
    assert listed.exit_code == 0, listed.output
    assert "connection where: 0 tool(s)" in listed.stdout


@pytest.mark.usefixtures("forked_stdio_scripts")
def test_the_tests_fork_a_python_stdio_server_from_the_fork_server(tmp_path: Path) -> None:
    """``forked_stdio_scripts`` (tests/conftest.py), which the example agent's tests use:
    the server is a fork, and runs in the app root as a fresh one does."""
    listed = CliRunner().invoke(main, ["-C", str(where_app(tmp_path)), "connections", "list"])
    assert listed.exit_code == 0, listed.output
    assert "connection where: 1 tool(s)" in listed.stdout
