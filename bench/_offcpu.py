"""Where a worker's event loop thread (and its writer lane's) is when it is not on a CPU:
a sampler in a process of its own, so that it never takes the worker's interpreter lock.

``python -m bench._offcpu --sched FILE --seconds S --out OUT PID...`` reads each worker's
thread ids and the address of its lock's futex from the thread probe's ``FILE``
(``_thread_sched.py``, ``EVE_BENCH_THREAD_SCHED``), then, ``--rate`` times a second (1,000
unless given), each watched thread's state (``/proc/<pid>/task/<tid>/stat``) and, when it
sleeps, the system call it sleeps in (``/syscall``: the call's number and arguments; a
futex's first argument is its address). Its ``schedstat`` at the start and the end gives the
exact time on a CPU and runnable; the samples split the rest (asleep) into: waiting for the
interpreter's lock (``gil: take``, in ``take_gil``), waiting for the thread it let the lock
go to to take it (``gil: hand-over``, ``drop_gil``'s forced switch), the lock's mutexes, any
other futex (a lock or a condition of Python's or SQLite's), ``epoll_wait`` (the loop with
nothing to do) and any other call by name (``pread64``, ``fsync``...).

The lock's layout is CPython 3.11's with glibc's condition variables (``pycore_gil.h``:
``cond``, ``mutex``, ``switch_cond``, ``switch_mutex``; a waiter sleeps on a condition's
``__g_signals``, 40 or 44 bytes in).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: x86-64 system calls by number: those a worker sleeps in, and a few it runs
SYSCALLS = {
    0: "read", 1: "write", 3: "close", 7: "poll", 8: "lseek", 17: "pread64", 18: "pwrite64",
    19: "readv", 20: "writev", 23: "select", 24: "sched_yield", 35: "nanosleep",
    43: "accept", 44: "sendto", 45: "recvfrom", 46: "sendmsg", 47: "recvmsg", 61: "wait4",
    72: "fcntl", 73: "flock", 74: "fsync", 75: "fdatasync", 77: "ftruncate", 87: "unlink",
    202: "futex", 230: "clock_nanosleep", 232: "epoll_wait", 257: "openat", 262: "newfstatat",
    270: "pselect6", 271: "ppoll", 281: "epoll_pwait", 285: "fallocate", 288: "accept4",
    441: "epoll_pwait2",
}  # fmt: skip
EPOLL = {"epoll_wait", "epoll_pwait", "epoll_pwait2"}
#: the interpreter's lock by the offset of a futex from its ``cond`` (see above)
GIL_OFFSETS = {
    # ``cond``: a waiter's signals, the signaller's wait for the old group's waiters to
    # leave (``__g_refs``) and the condition's own lock (``__g1_orig_size``)
    40: "gil: take",
    44: "gil: take",
    16: "gil: cond",
    20: "gil: cond",
    32: "gil: cond",
    48: "gil: mutex",
    # ``switch_cond`` (88 bytes in): the thread that let the lock go waits for a taker
    128: "gil: hand-over",
    132: "gil: hand-over",
    104: "gil: hand-over",
    108: "gil: hand-over",
    120: "gil: hand-over",
    136: "gil: switch mutex",
}
#: the bytes of the lock's four members
_GIL_SIZE = 176
#: where the lock's waiter sleeps in its condition: 40 or 44 bytes in, the condition at 8
_SIGNALS = (40, 44)
#: the roles whose threads are sampled (``_thread_sched.ROLES``)
WATCHED = ("loop", "lane")


def gil_base(futex: int) -> int:
    """The lock's condition's address from a waiter's futex (the condition is 8-aligned)."""
    return futex - _SIGNALS[0] if futex % 8 == 0 else futex - _SIGNALS[1]


def category(stat: str, syscall: str, *, gil: int | None) -> str:
    """What a thread whose ``stat`` and ``syscall`` files read so is doing: ``R`` (on a CPU
    or runnable), else the call it sleeps in (``D`` marks an uninterruptible sleep)."""
    state = stat[stat.rindex(")") + 2]
    fields = syscall.split()
    if state == "R" or not fields or not fields[0].isdigit():
        return "R"  # ("running": it woke between the two reads)
    number = int(fields[0])
    name = SYSCALLS.get(number, f"syscall {number}")
    if name == "futex":
        offset = int(fields[1], 16) - gil if gil is not None and len(fields) > 1 else -1
        lock = 0 <= offset < _GIL_SIZE
        name = GIL_OFFSETS.get(offset, f"gil: +{offset}" if lock else "futex: other")
    elif name in EPOLL:
        name = "epoll_wait"
    return f"{name} (D)" if state == "D" else name


@dataclass(kw_only=True)
class Target:
    pid: int
    tid: int
    role: str
    gil: int | None
    counts: Counter[str] = field(default_factory=Counter)
    start: tuple[int, int] = (0, 0)
    end: tuple[int, int] = (0, 0)
    fds: tuple[int, int] = (-1, -1)

    def open(self) -> None:
        where = f"/proc/{self.pid}/task/{self.tid}"
        self.fds = (os.open(f"{where}/stat", os.O_RDONLY), os.open(f"{where}/syscall", os.O_RDONLY))
        self.start = schedstat(self.pid, self.tid)

    def sample(self) -> None:
        try:
            stat = os.pread(self.fds[0], 1024, 0).decode()
            # a thread on a CPU needs no second read: most of the loop's samples are
            syscall = "" if _running(stat) else os.pread(self.fds[1], 256, 0).decode()
        except OSError:
            self.counts["gone"] += 1
            return
        self.counts[category(stat, syscall, gil=self.gil)] += 1

    def close(self) -> None:
        self.end = schedstat(self.pid, self.tid)
        for fd in self.fds:
            os.close(fd)


def _running(stat: str) -> bool:
    return stat[stat.rindex(")") + 2] == "R"


def schedstat(pid: int, tid: int) -> tuple[int, int]:
    """A thread's ns on a CPU and ns runnable waiting for one (0, 0 once it has ended)."""
    try:
        run, wait, _ = Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()
    except (OSError, ValueError):
        return 0, 0
    return int(run), int(wait)


def targets(sched: Path, pids: Sequence[int], *, patience: float = 15.0) -> list[Target]:
    """The watched threads of each worker, as the thread probe's file names them."""
    deadline = time.monotonic() + patience
    while True:
        found = _from_probe(sched, pids)
        if {t.pid for t in found if t.role == "loop"} == set(pids) or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def _from_probe(sched: Path, pids: Sequence[int]) -> list[Target]:
    rows = [json.loads(line) for line in sched.read_text().splitlines()] if sched.exists() else []
    found = []
    for pid in pids:
        mine = [row for row in rows if row["pid"] == pid]
        futex = next((row["gil_futex"] for row in mine if row.get("gil_futex")), None)
        last: dict[str, list[Any]] = next(
            (row["threads"] for row in reversed(mine) if "threads" in row), {}
        )
        gil = gil_base(futex) if futex is not None else None
        found += [
            Target(pid=pid, tid=int(tid), role=info[0], gil=gil)
            for tid, info in last.items()
            if info[0] in WATCHED
        ]
    return found


def sample(watched: list[Target], *, seconds: float, rate: float) -> dict[str, Any]:
    """Sample ``watched`` ``rate`` times a second for ``seconds``; the split of each."""
    for target in watched:
        target.open()
    began, ticks, period = time.perf_counter(), 0, 1.0 / rate
    cpu = time.process_time()
    while time.perf_counter() - began < seconds:
        for target in watched:
            target.sample()
        ticks += 1
        time.sleep(max(0.0, began + ticks * period - time.perf_counter()))
    elapsed = time.perf_counter() - began
    for target in watched:
        target.close()
    return {
        "seconds": round(elapsed, 2),
        "ticks_per_s": round(ticks / elapsed, 1),
        "sampler_cpu_s_per_s": round((time.process_time() - cpu) / elapsed, 3),
        "threads": [split(target, elapsed) for target in watched],
    }


def split(target: Target, seconds: float) -> dict[str, Any]:
    """A thread's time (s/s): on a CPU and runnable from ``schedstat``, the rest (asleep)
    shared by where its sleeping samples were."""
    on_cpu = (target.end[0] - target.start[0]) / 1e9 / seconds
    runnable = (target.end[1] - target.start[1]) / 1e9 / seconds
    asleep = max(0.0, 1.0 - on_cpu - runnable)
    samples = sum(target.counts.values())
    sleeping = {k: n for k, n in target.counts.items() if k not in ("R", "gone")}
    slept = sum(sleeping.values())
    return {
        "pid": target.pid,
        "tid": target.tid,
        "role": target.role,
        "samples": samples,
        "running_samples_pct": round(100 * target.counts["R"] / samples, 1) if samples else None,
        "on_cpu_s_per_s": round(on_cpu, 3),
        "runnable_s_per_s": round(runnable, 3),
        "asleep_s_per_s": {
            k: round(asleep * n / slept, 3) for k, n in sorted(sleeping.items(), key=_largest)
        },
    }


def _largest(item: tuple[str, int]) -> int:
    return -item[1]


def lines(found: dict[str, Any]) -> list[str]:
    """The sampler's split as text, a line per thread."""
    out = [
        f"off-CPU sampler: {found['ticks_per_s']} samples/s per thread over {found['seconds']} "
        f"s, its own CPU {found['sampler_cpu_s_per_s']} s/s"
    ]
    for thread in found["threads"]:
        asleep = ", ".join(f"{k} {v}" for k, v in thread["asleep_s_per_s"].items())
        out.append(
            f"  worker {thread['pid']} {thread['role']}: on a CPU {thread['on_cpu_s_per_s']} "
            f"s/s, runnable {thread['runnable_s_per_s']} s/s, asleep: {asleep}"
        )
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench._offcpu", description=__doc__)
    parser.add_argument("--sched", type=Path, required=True, help="the thread probe's file")
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--rate", type=float, default=1000.0, help="samples a second")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("pids", type=int, nargs="+")
    args = parser.parse_args(argv)
    watched = targets(args.sched, args.pids)
    found = sample(watched, seconds=args.seconds, rate=args.rate)
    args.out.write_text(json.dumps(found))


if __name__ == "__main__":
    main()


def start(
    sched: Path, pids: Sequence[int], *, seconds: float, rate: float
) -> subprocess.Popen[bytes]:
    """The sampler as a process of its own beside a bench's server, its split written to
    ``<sched>.offcpu.json``."""
    repo = Path(__file__).resolve().parent.parent
    command = [
        sys.executable, "-m", "bench._offcpu", "--sched", str(sched), "--seconds", str(seconds),
        "--rate", str(rate), "--out", f"{sched}.offcpu.json", *map(str, pids),
    ]  # fmt: skip
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(repo)}
    return subprocess.Popen(command, cwd=repo, env=env)


def finish(proc: subprocess.Popen[bytes], sched: Path) -> dict[str, Any] | None:
    """The sampler's split once it has ended (None if it failed)."""
    if proc.wait(60) != 0:
        return None
    found: dict[str, Any] = json.loads(Path(f"{sched}.offcpu.json").read_text())
    return found
