"""The Node AG-UI client (``js/run.mjs``, ``@ag-ui/client``'s ``HttpAgent``), installed once
per test session from its lock file and run as a subprocess against a loopback server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.npm import npm_ci

JS = Path(__file__).parent / "js"


def install() -> None:
    """``npm ci`` the client, unless node or npm are absent (then the tests skip)."""
    npm_ci(JS, needed_for="@ag-ui/client")


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
