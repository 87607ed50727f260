"""A turn starts the catalog's MCP servers, and imports the ``mcp`` SDK, only when it first
needs them: whole ``eve run`` processes, their imports traced by ``python -X importtime``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import AppFactory

#: a "server" that only leaves a mark that it was started; it speaks no MCP, so a listing
#: of it fails (a named error), which the turn that needs it shows
MARKING = """
from eve.connections import define_mcp_connection

default = define_mcp_connection(
    description="Leaves a mark.",
    command=["python", "-c", "open('server-started', 'w').close()"],
    connect_timeout_seconds=5,
)
"""
APP = {
    "agent/agent.py": "from eve import define_agent\ndefault = define_agent(model='offline/test')\n",
    "agent/connections/marking.py": MARKING,
}


def eve_run(root: Path, script: list[dict[str, object]]) -> tuple[str, str]:
    (root / "script.json").write_text(json.dumps(script))
    done = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "eve",
            "run",
            "--model",
            "offline/script:script.json",
            "hello",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr


def imported(stderr: str) -> set[str]:
    """The top-level packages ``-X importtime`` saw imported."""
    lines = [line.rpartition("|")[2].strip() for line in stderr.splitlines()]
    return {line.split(".")[0] for line in lines if line and " " not in line}


def test_a_turn_that_never_needs_the_catalog_starts_no_server_and_no_mcp(
    make_app: AppFactory,
) -> None:
    root = make_app(APP)
    out, err = eve_run(root, [{"text": "hello back"}])
    assert "hello back" in out
    assert not (root / "server-started").exists()
    assert "mcp" not in imported(err)


def test_a_search_of_the_catalog_starts_its_servers_then(make_app: AppFactory) -> None:
    root = make_app(APP)
    script = [{"tool_calls": [{"name": "eve__search", "input": {"query": "mark"}}]}, {"text": "ok"}]
    _, err = eve_run(root, script)
    assert (root / "server-started").exists()
    assert "mcp" in imported(err)
    assert "connection marking failed" in err
