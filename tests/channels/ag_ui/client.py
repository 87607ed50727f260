"""The Node AG-UI client (``js/run.mjs``, ``@ag-ui/client``'s ``HttpAgent``), installed once
per test session from its lock file and run as a subprocess against a loopback server."""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

JS = Path(__file__).parent / "js"


def install() -> None:
    """``npm ci`` the client, unless node or npm are absent (then the tests skip)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed to run @ag-ui/client (install Node.js)")
    # pytest-xdist workers install at once: one runs npm ci, the others wait for it
    with (JS / ".install.lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        _install()


def _install() -> None:
    installed = JS / "node_modules" / ".package-lock.json"
    lock = JS / "package-lock.json"
    if installed.exists() and installed.stat().st_mtime >= lock.stat().st_mtime:
        return
    done = subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund"],
        cwd=JS,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"npm ci failed:\n{done.stdout}\n{done.stderr}"


def scenario(url: str, thread_id: str, runs: list[dict[str, Any]], **more: Any) -> str:
    return json.dumps({"url": url, "threadId": thread_id, "runs": runs, **more})


def start(scenario_json: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        ["node", "run.mjs", scenario_json],
        cwd=JS,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str], *, cut: bool = False) -> dict[str, Any]:
    """The client's result; ``cut``: its connection was cut, which the client also reports
    as an unhandled rejection (a non-zero exit) after writing its result."""
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0 or (cut and out), f"the client failed:\n{out}\n{err}"
    result: dict[str, Any] = json.loads(out)
    result["stderr"] = err
    return result


def run(scenario_json: str) -> dict[str, Any]:
    return finish(start(scenario_json))


def types(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]
