"""A sampling profile of a running server with py-spy, summarised for a benchmark's report.

py-spy reads the target's memory from outside (``--nonblocking``: it never pauses it; pausing
every thread 97 times a second cut the server's throughput tenfold), so the server runs
unchanged and its own CPU figures hold. Samples of idle threads are left out (py-spy's
default, and the leaves of waiting threads it misses: ``IDLE_LEAVES``), so the shares are
shares of the server's busy time. Without py-spy (on ``PATH`` or beside the interpreter,
where the bench extra installs it) the report says so instead of a profile.

Those shares overstate a worker bound by the interpreter's lock: a thread waiting for the
lock is sampled as busy. ``EVE_BENCH_PROFILE=gil`` (the bench's own environment) samples only
the thread holding it (py-spy's ``--gil``), so the shares are of the lock's holding time.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: samples per second: enough for shares of a few percent over a 30 s window
RATE = 97
#: the bench's setting for the profile's kind: ``gil`` samples only the lock's holder
PROFILE_SETTING = "EVE_BENCH_PROFILE"
#: the bench's setting naming a file to keep py-spy's raw profile in
KEEP_SETTING = "EVE_BENCH_PROFILE_KEEP"
#: (name, pattern of a frame): where the busy samples are, a sample counted under the first
#: area in this order that any of its frames matches (an event-log write inside a DBOS step
#: is the event log's)
AREAS: list[tuple[str, re.Pattern[str]]] = [
    # work in a pool thread has only the thread's stack: the store's method names it
    ("event log writes", re.compile(r"SessionWriter\.|SessionStore\.(append_events|next_event)")),
    (
        "stream reads (followers)",
        re.compile(r"EventLog\.(read|batches|_follow|_rows) |SessionStore\.read_events"),
    ),
    # what a followed stream sends (its chunks' socket writes), apart from what it reads
    ("stream writes (followers)", re.compile(r"[(/]eve/server/followers")),
    (
        "DBOS polling (queue, notifications)",
        re.compile(r"[(/]dbos/_queue\.py|_notification_listener"),
    ),
    (
        "durable step records",
        re.compile(
            r"[(/]eve/sessions/(durable_steps|checkpoint)|invoke_step|"
            r"(record_operation_result|check_operation_execution) "
        ),
    ),
    ("workflows (queue, start, end)", re.compile(r"[(/]eve/sessions/|[(/]dbos/")),
    (
        "HTTP (uvicorn, starlette, eve.server)",
        re.compile(r"[(/](uvicorn|starlette|h11|eve/server)/"),
    ),
    ("agent loop (eve.execution, models)", re.compile(r"[(/]eve/(execution|models)/")),
]
OTHER = "other (asyncio, threads, imports)"
#: leaves of a thread that waits: py-spy's own idle detection misses threads blocked in C
#: (a pool thread in ``queue.get``, the loop in ``epoll_wait``), so they are dropped here
IDLE_LEAVES = frozenset(
    {
        "_worker (concurrent/futures/thread.py)",
        "EpollSelector.select (selectors.py)",
        "Condition.wait (threading.py)",
        "Event.wait (threading.py)",
        "Thread._wait_for_tstate_lock (threading.py)",
        # uvloop's loop (eve serve's) runs in C under this frame, its epoll_wait too: the
        # leaf of a loop that waits (and of uvloop's own C work, which py-spy cannot tell
        # apart and is so left out of the shares)
        "Runner.run (asyncio/runners.py)",
    }
)


@dataclass(kw_only=True)
class Recording:
    proc: subprocess.Popen[bytes] | None
    out: Path
    why_not: str | None = None
    #: only the thread holding the interpreter's lock was sampled
    gil: bool = False

    def stop(self) -> None:
        """End the recording now (py-spy writes what it has on SIGINT): its ``--duration``
        counts samples, and sampling hundreds of threads on a loaded machine falls behind,
        so by the clock it would run on into what follows the window."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)

    def summary(self, *, top: int = 12) -> dict[str, Any]:
        if self.proc is None:
            return {"available": False, "why": self.why_not}
        self.proc.wait(60)
        if not self.out.exists():
            return {
                "available": False,
                "why": f"py-spy wrote no profile (exit {self.proc.returncode})",
            }
        raw = self.out.read_text(errors="replace")
        if keep := os.environ.get(KEEP_SETTING):
            Path(keep).write_text(raw)  # for a closer look than the summary's
        summary = summarise(raw, top=top)
        return summary | {"gil": self.gil}


def record(pid: int, seconds: float, out: Path) -> Recording:
    """Sample ``pid`` and its children for ``seconds``, in the background."""
    # the bench extra installs it beside the interpreter, on PATH only in an active venv
    beside = Path(sys.executable).parent
    binary = shutil.which("py-spy") or shutil.which("py-spy", path=str(beside))
    if binary is None:
        why_not = "py-spy is not installed (the bench extra has it: make bench)"
        return Recording(proc=None, out=out, why_not=why_not)
    command = [
        binary, "record", "--pid", str(pid), "--subprocesses", "--nonblocking",
        "--rate", str(RATE), "--duration", str(max(1, round(seconds))),
        "--format", "raw", "--output", str(out),
    ]  # fmt: skip
    gil = os.environ.get(PROFILE_SETTING) == "gil"
    if gil:
        command.append("--gil")
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return Recording(proc=proc, out=out, gil=gil)


def _frames(stack: str) -> list[str]:
    # py-spy's raw format: "process;thread;frame (file:line);...;leaf count"
    return [f for f in stack.split(";") if "(" in f and ".py" in f]


def _function(frame: str) -> str:
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rpartition(":")[0]
    for marker in ("/site-packages/", "/eve/", "/lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{name} ({path})"


def summarise(raw: str, *, top: int) -> dict[str, Any]:
    """Shares of busy samples by area and the functions most often on top of the stack."""
    areas: Counter[str] = Counter()
    leaves: Counter[str] = Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not count_text.isdigit():
            continue
        count = int(count_text)
        frames = _frames(stack)
        leaf = _function(frames[-1]) if frames else ""
        if leaf in IDLE_LEAVES:
            continue
        total += count
        if leaf:
            leaves[leaf] += count
        areas[_area(frames)] += count
    share = (lambda n: round(100 * n / total, 1)) if total else (lambda n: 0.0)
    return {
        "available": True,
        "samples": total,
        "areas_pct": {name: share(n) for name, n in areas.most_common()},
        "top_self_pct": {name: share(n) for name, n in leaves.most_common(top)},
    }


def _area(frames: list[str]) -> str:
    for name, pattern in AREAS:
        if any(pattern.search(frame) for frame in frames):
            return name
    return OTHER
