"""What an idle ``eve serve`` costs: its process's CPU over a quiet window, with no session
followed and with 100 followers of one session.

An idle server should cost about nothing: followers are pushed events (no re-reads), turns
are picked up when queued (DBOS's own queue poll is a 1 s safety net), and DBOS's SQLite
message poll wakes once a second. The figure is the server's user + system CPU, read from
``/proc/<pid>/stat``, divided by the window's wall time: the share of one core.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from bench._machine import machine_info
from bench._results import publish

NAME = "idle_cpu"
REPO = Path(__file__).resolve().parent.parent
WINDOW_SECONDS, QUICK_WINDOW_SECONDS = 30.0, 3.0
FOLLOWERS = 100
#: after start, and after the followers connect, before the window opens
SETTLE_SECONDS = 3.0


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _serve(root: Path, port: int) -> subprocess.Popen[bytes]:
    eve = Path(sys.executable).parent / "eve"
    command = [str(eve), "serve", "--port", str(port), "--model", "offline/test"]
    return subprocess.Popen(command, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _ready(url: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health").status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError("eve serve did not answer /health within 60 s")


def _follow(url: str, session_id: str, stop: threading.Event) -> None:
    with httpx.stream("GET", f"{url}/session/{session_id}/stream", timeout=None) as response:
        for _ in response.iter_lines():
            if stop.is_set():
                return


def _measure(followers: int, window: float) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shutil.copytree(REPO / "agent", root / "agent")
        shutil.copytree(REPO / ".eve", root / ".eve", ignore=shutil.ignore_patterns("sessions"))
        port = _free_port()
        url = f"http://127.0.0.1:{port}/eve/v1"
        server = _serve(root, port)
        stop = threading.Event()
        try:
            _ready(url)
            if followers:
                session_id = httpx.post(url + "/session", json={}).json()["sessionId"]
                for _ in range(followers):
                    args = (url, session_id, stop)
                    threading.Thread(target=_follow, args=args, daemon=True).start()
            time.sleep(SETTLE_SECONDS)
            before, start = _cpu_seconds(server.pid), time.monotonic()
            time.sleep(window)
            used, elapsed = _cpu_seconds(server.pid) - before, time.monotonic() - start
        finally:
            stop.set()
            server.terminate()
            server.wait()
    return used / elapsed


def _table(report: dict[str, Any]) -> str:
    rows = [f"| {case['followers']} | {case['core_percent']:.1f} % |" for case in report["cases"]]
    return "\n".join(
        [
            f"# {NAME}",
            "",
            f"`eve serve` (SQLite, `offline/test`) idle for {report['window_seconds']:.0f} s: "
            "its process's CPU as a share of one core.",
            "",
            "| followers of one session | CPU |",
            "|---|---|",
            *rows,
            "",
        ]
    )


def run(*, quick: bool = False) -> dict[str, Any]:
    window = QUICK_WINDOW_SECONDS if quick else WINDOW_SECONDS
    cases = [{"followers": n, "core_percent": 100 * _measure(n, window)} for n in (0, FOLLOWERS)]
    report = {"machine": machine_info(), "window_seconds": window, "cases": cases}
    publish(NAME, report, _table(report), quick=quick)
    return report


if __name__ == "__main__":
    run(quick="--quick" in sys.argv[1:])
