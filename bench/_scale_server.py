"""The server side of the scale benchmark: the app, the model plugin, ``eve serve`` processes
and what ``/proc`` says about them (CPU of the whole process tree, RSS).

The model is ``bench/_sleep_model.py``, installed the way ``pip install`` would install a
plugin: a dist-info naming it as an ``eve.plugins`` entry point, in a directory on the
server's ``PYTHONPATH``. A server may run in a network namespace (``ip netns exec``) to stand
for a host of its own (``tests/netns.py``).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from eve.hooks import PLUGIN_GROUP

REPO = Path(__file__).resolve().parent.parent
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
#: a shared token: a server bound to a namespace's address is not on loopback
TOKEN = "bench-scale-token-0123456789abcdef"

AGENT = {
    "agent/instructions.md": "You are the scale benchmark's agent.\n",
    "agent/tools/noop.py": '''
        """A tool that does nothing: the turn's steps cost the server only eve's own work."""

        from eve.tools import tool


        @tool
        def noop() -> str:
            """Do nothing."""
            return "ok"
        ''',
}


def write_app(root: Path) -> None:
    for rel, text in AGENT.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


def install_model_plugin(site: Path) -> None:
    """The dist-info of a distribution whose ``eve.plugins`` entry point is the sleep model."""
    info = site / "eve_bench_sleep-0.1.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: eve-bench-sleep\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{PLUGIN_GROUP}]\nbench_sleep = bench._sleep_model\n")


# --- /proc -----------------------------------------------------------------------------


def _stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name is in parentheses and may hold spaces: split after it
    return raw[raw.rindex(")") + 2 :].split()


def process_tree(root: int) -> list[int]:
    """``root`` and every process under it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := _stat(int(entry))) is not None:
            children.setdefault(int(fields[1]), []).append(int(entry))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU of the processes (alive ones; a dead one's time is gone with it)."""
    ticks = 0
    for pid in pids:
        if (fields := _stat(pid)) is not None:
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / CLOCK_TICKS


def rss_bytes(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError, IndexError, ValueError):
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_SIZE
    return total


def thread_count(pids: list[int]) -> int:
    """Threads of the processes now (``/proc/<pid>/status``)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError, ValueError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("Threads:"):
                    total += int(line.split()[1])
    return total


def log_summary(text: str, *, top: int = 3) -> dict[str, object]:
    """What a server complained of: its log's lines but uvicorn's ``INFO`` ones and the
    bodies of tracebacks (Python's last-resort handler prints a warning bare), how many,
    and the most frequent (their first 120 characters, numbers blanked so one message
    counts once)."""
    found: Counter[str] = Counter()
    for line in text.splitlines():
        if line.strip() and not line.startswith(("INFO", " ", "\t", "Traceback", "eve:")):
            found[re.sub(r"\d+", "N", line)[:120]] += 1
    return {"lines": sum(found.values()), "most": dict(found.most_common(top))}


# --- eve serve ------------------------------------------------------------------------


@dataclass(kw_only=True)
class ServeProcess:
    """One ``eve serve`` (a supervisor and its workers when ``workers`` > 1)."""

    app_root: Path
    site: Path
    host: str
    port: int
    workers: int
    model: str
    concurrency: int
    worker_id: str
    database_url: str | None = None
    #: ``ip netns exec <namespace>``: the process stands for a host of its own
    namespace: str | None = None
    #: more environment for the server (``EVE_BENCH_SQL_COUNTS``)
    env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None
    #: where its output goes: in the run's directory, so it goes with it (a failed start
    #: quotes its tail)
    log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log = self.app_root / f"serve-{self.worker_id}.log"

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/eve/v1"

    def start(self, timeout: float = 90.0) -> ServeProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith("EVE_")}
        env |= {
            "EVE_WORKER_ID": self.worker_id,
            "EVE_API_TOKEN": TOKEN,
            "PYTHONPATH": os.pathsep.join([str(self.site), str(REPO)]),
            # a bench run measures what the server spends: no bytecode written mid-run
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        if self.database_url is not None:
            env["EVE_DATABASE_URL"] = self.database_url
        env |= self.env
        command = [
            sys.executable,
            "-m",
            "eve",
            "serve",
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--workers",
            str(self.workers),
            "--concurrency",
            str(self.concurrency),
            "--model",
            self.model,
        ]
        if self.namespace is not None:
            command = ["ip", "netns", "exec", self.namespace, *command]
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                command, cwd=self.app_root, env=env, stdout=out, stderr=subprocess.STDOUT
            )
        self._wait_healthy(timeout)
        return self

    def _wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"eve serve exited early:\n{self.output()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/health", timeout=1).status_code == 200:
                    return
            time.sleep(0.2)
        raise RuntimeError(f"eve serve never became healthy:\n{self.output()}")

    def pids(self) -> list[int]:
        assert self.proc is not None
        return process_tree(self.proc.pid)

    def worker_pids(self) -> dict[str, int]:
        """Each worker's pid by its DBOS executor id (``<worker_id>-<index>``). The
        supervisor starts worker 0 first and the others in order once it serves, so their
        start times give their indexes (a worker restarted since would be out of order)."""
        assert self.proc is not None
        if self.workers == 1:
            return {f"{self.worker_id}-0": self.proc.pid}
        stats = {pid: _stat(pid) for pid in self.pids()}
        children = {pid: int(s[19]) for pid, s in stats.items() if s and int(s[1]) == self.proc.pid}
        started = sorted(children, key=children.__getitem__)
        return {f"{self.worker_id}-{index}": pid for index, pid in enumerate(started)}

    def output(self, tail: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-tail:] if self.log.exists() else ""

    def kill(self) -> None:
        """SIGKILL the whole tree: no shutdown code runs."""
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.kill()


class HealthProbe:
    """Asks a server's ``/health`` every ``PROBE_SECONDS`` from a thread of its own, timing
    each answer: the route reads nothing, so its time is how long a request waits for the
    server's event loop (its lag), which no CPU figure shows."""

    PROBE_SECONDS = 0.25

    def __init__(self, url: str) -> None:
        self.url = url + "/health"
        self.seconds: list[float] = []
        self.failed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="health-probe", daemon=True)

    def start(self) -> HealthProbe:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        with httpx.Client(timeout=60.0) as http:
            while not self._stop.wait(self.PROBE_SECONDS):
                began = time.perf_counter()
                try:
                    http.get(self.url).raise_for_status()
                except httpx.HTTPError:
                    self.failed += 1
                    continue
                self.seconds.append(time.perf_counter() - began)
