"""``EVE_BENCH_THREAD_SCHED=FILE`` (a server setting, through ``--server-env``): where a
worker's threads spend their time, as the kernel's scheduler counts it. Each worker appends
to ``FILE`` one JSON line a second: for each of its threads, by role (``loop``: the event
loop's, the main thread; ``lane``: ``eve-writer``; ``read``, ``turn``, ``request``: eve's
pools; ``dbos``: DBOS's threads; ``bench``: this probe and its kind; ``other_<name>``), its
nanoseconds on a CPU and runnable waiting for one and its timeslices
(``/proc/self/task/<tid>/schedstat``), its voluntary and involuntary context switches
(``/status``), all cumulative; the turns the worker ran (its model's last steps begun);
and once, the address of the futex a thread waits on for the interpreter's lock
(``gil_futex``), found by making a thread wait for it, so that the off-CPU sampler
(``_offcpu.py``) can tell that wait from the others.

``python -m bench._thread_sched FILE [SINCE UNTIL]`` (wall clock: a row's ``window_wall``):
per worker and role, CPU s/s, runnable wait s/s and the switches a second and a turn. A
diagnostic: reading ``/proc`` costs the worker a few ms a second (measured in
``docs/sessions.md``, *Where a worker's threads wait*).
"""

from __future__ import annotations

import ctypes
import itertools
import json
import os
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: a thread's role by the start of its name (eve's pools and threads; DBOS's are told by
#: what they run: ``_dbos_role``)
ROLES = (
    ("eve-writer", "lane"),
    ("eve-read", "read"),
    ("eve-turn", "turn"),
    ("eve-request", "request"),
    ("eve-bench", "bench"),
)
#: the functions DBOS runs in threads of its own (``dbos/_dbos.py``, ``_queue.py``)
DBOS_TARGETS = ("dbos.", "_dbos")


def role_of(name: str, *, main: bool, target: str = "") -> str:
    """The role of a thread named ``name`` whose run function's module and name are
    ``target``; ``main``: the process's main thread, the event loop's in a worker."""
    if main:
        return "loop"
    found = next((role for start, role in ROLES if name.startswith(start)), None)
    if found is not None:
        return found
    if any(part in target for part in DBOS_TARGETS) or "dbos" in name.lower():
        return "dbos"
    return "other_" + (name.split(" ", maxsplit=1)[0].rstrip("_-0123456789") or "native")


def _target(thread: threading.Thread) -> str:
    run = getattr(thread, "_target", None)
    owner = getattr(run, "__self__", None)
    module = getattr(owner if owner is not None else run, "__module__", "") or ""
    return f"{module}.{getattr(run, '__qualname__', '')}"


def task_counters(pid: int | str, tid: int | str) -> tuple[int, int, int, int, int] | None:
    """A thread's ns on a CPU, ns runnable waiting for one, timeslices, voluntary and
    involuntary switches; None once it has ended."""
    where = f"/proc/{pid}/task/{tid}"
    try:
        run, wait, slices = (int(x) for x in Path(f"{where}/schedstat").read_text().split())
        status = Path(f"{where}/status").read_text()
    except (OSError, ValueError):
        return None
    switches = dict.fromkeys(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"), 0)
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key in switches:
            switches[key] = int(value)
    return run, wait, slices, *switches.values()  # type: ignore[return-value]


def snapshot(main: int, pid: int | str = "self") -> dict[str, list[Any]]:
    """Every thread of this process: ``tid -> [role, name, *task_counters]``; ``main``: the
    event loop's thread."""
    threads = {t.native_id: t for t in threading.enumerate() if t.native_id is not None}
    out: dict[str, list[Any]] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        counters = task_counters(pid, tid)
        if counters is None:
            continue
        thread = threads.get(int(tid))
        name = thread.name if thread is not None else "native"
        target = _target(thread) if thread is not None else ""
        out[tid] = [role_of(name, main=int(tid) == main, target=target), name, *counters]
    return out


def gil_futex() -> int | None:
    """The futex a thread waits on for the interpreter's lock (in ``take_gil``: its
    condition's): a thread is made to wait for the lock while this one holds it in a C call
    (ctypes' ``PyDLL`` keeps it), and the kernel says where that thread waits. The switch
    interval is raised meanwhile, so that the waiter does not ask for the lock back between
    the calls. On a loaded machine the waiter may not have run by the time the kernel is
    asked, so it is tried again with longer holds; None where ``/proc`` does not say."""
    for hold_us in HOLDS_US:
        found = _gil_futex_once(hold_us)
        if found is not None:
            return found
    return None


#: how long each try holds the lock while the waiter comes to wait for it, microseconds
HOLDS_US = (10_000, 30_000, 100_000, 300_000)


def _gil_futex_once(hold_us: int) -> int | None:
    libc = ctypes.PyDLL(None)  # its calls keep the interpreter's lock
    libc.usleep.argtypes = [ctypes.c_uint]
    libc.open.argtypes = [ctypes.c_char_p, ctypes.c_int]
    libc.read.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
    libc.read.restype = ctypes.c_ssize_t
    ids: list[int] = []

    def waiter() -> None:
        ids.append(threading.get_native_id())
        time.sleep(0.002)

    interval, text = sys.getswitchinterval(), ctypes.create_string_buffer(512)
    sys.setswitchinterval(5.0)
    thread = threading.Thread(target=waiter, name="eve-bench-gil-waiter")
    try:
        thread.start()
        while not ids:
            time.sleep(0.001)
        path = f"/proc/self/task/{ids[0]}/syscall".encode()
        libc.usleep(hold_us)  # the waiter wakes meanwhile and waits for the lock
        fd = libc.open(path, os.O_RDONLY)
        got = libc.read(fd, text, 511) if fd >= 0 else -1
        libc.close(fd)
    finally:
        sys.setswitchinterval(interval)
    thread.join()
    fields = text.raw[: max(got, 0)].decode(errors="replace").split()
    return int(fields[1], 16) if len(fields) > 1 and fields[0] == str(FUTEX) else None


#: the server setting naming the probe's file
SETTING = "EVE_BENCH_THREAD_SCHED"
#: the futex system call's number (x86-64; the sampler names the others, ``_offcpu.py``)
FUTEX = 202


def thread_sched(
    path: str, *, turns: Callable[[], int] = lambda: 0, stop: threading.Event | None = None
) -> None:
    """Append each thread's counters to ``path`` every second, from a thread of its own.
    Called on the event loop's thread (a worker imports its plugins there, in ``prepare``),
    which need not be the process's first (a worker forked from a thread). ``stop``: set,
    the thread ends (a test's)."""
    futex, loop = gil_futex(), threading.get_native_id()

    def dump() -> None:
        pid = os.getpid()
        # one write a line: the workers append to one file
        out = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(
            out, (json.dumps({"pid": pid, "t": time.time(), "gil_futex": futex}) + "\n").encode()
        )
        ended = stop or threading.Event()
        while True:
            row = {"pid": pid, "t": time.time(), "turns": turns(), "threads": snapshot(loop)}
            os.write(out, (json.dumps(row) + "\n").encode())
            if ended.wait(1.0):
                os.close(out)
                return

    threading.Thread(target=dump, daemon=True, name="eve-bench-thread-sched").start()


def count_turns(model: type[Any], turn_and_step: Callable[[Any], tuple[str, int]]) -> Any:
    """Count ``model``'s last steps as they begin (one a turn): a callable for the count."""
    stream, begun = model.stream, [0]

    def counted(self: Any, request: Any) -> Any:
        if turn_and_step(request)[1] == self.spec.steps - 1:
            begun[0] += 1
        return stream(self, request)

    model.stream = counted
    return lambda: begun[0]


# --- the summary ---------------------------------------------------------------------------

_FIELDS = ("cpu", "runnable", "slices", "voluntary", "involuntary")


def summary(path: str, since: float = 0.0, until: float = float("inf")) -> dict[str, Any]:
    """Per worker (its pid) and role: CPU and runnable wait (s/s), timeslices and the
    switches a second and a turn, from the lines written from ``since`` to a second past
    ``until``; the thread count of each role, and the address of the lock's futex."""
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    out: dict[str, Any] = {}
    for pid in sorted({row["pid"] for row in rows}):
        mine = [r for r in rows if r["pid"] == pid]
        futex = next((r["gil_futex"] for r in mine if "gil_futex" in r), None)
        lines = [r for r in mine if "threads" in r and since <= r["t"] <= until + 1.0]
        if len(lines) >= 2:
            out[str(pid)] = _worker(lines) | {"gil_futex": futex}
    return out


def _worker(lines: list[dict[str, Any]]) -> dict[str, Any]:
    first, last = lines[0], lines[-1]
    seconds = last["t"] - first["t"]
    turns = last["turns"] - first["turns"]
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(_FIELDS))
    counts: dict[str, set[str]] = defaultdict(set)
    for before, after in itertools.pairwise(lines):
        for tid, (role, _name, *now) in after["threads"].items():
            counts[role].add(tid)
            # a thread new since the line before began from nothing then
            was = before["threads"].get(tid, [role, _name, *[0] * len(now)])[2:]
            for i, (a, b) in enumerate(zip(now, was, strict=True)):
                sums[role][i] += a - b
    roles = {
        role: _rates(values, seconds=seconds, turns=turns) | {"threads": len(counts[role])}
        for role, values in sorted(sums.items(), key=lambda item: -item[1][0])
    }
    total = [sum(values[i] for values in sums.values()) for i in range(len(_FIELDS))]
    return {
        "seconds": round(seconds, 1),
        "turns": turns,
        "turns_per_s": round(turns / seconds, 2) if seconds else None,
        "all": _rates(total, seconds=seconds, turns=turns),
        "roles": roles,
    }


def _rates(values: list[float], *, seconds: float, turns: int) -> dict[str, float | None]:
    cpu, runnable, slices, voluntary, involuntary = values
    per_s = (lambda v: round(v / seconds, 1)) if seconds else (lambda v: None)
    per_turn = (lambda v: round(v / turns, 2)) if turns else (lambda v: None)
    return {
        "cpu_s_per_s": round(cpu / 1e9 / seconds, 3) if seconds else None,
        "runnable_s_per_s": round(runnable / 1e9 / seconds, 3) if seconds else None,
        "cpu_ms_per_turn": per_turn(cpu / 1e6),
        "runnable_ms_per_turn": per_turn(runnable / 1e6),
        "slices_per_s": per_s(slices),
        # a timeslice's mean run, and its mean wait for a core after the thread woke (or
        # was preempted): what a hand-over to a sleeping thread costs on this machine
        "cpu_us_per_slice": round(cpu / 1e3 / slices, 1) if slices else None,
        "runnable_us_per_slice": round(runnable / 1e3 / slices, 1) if slices else None,
        "voluntary_per_s": per_s(voluntary),
        "involuntary_per_s": per_s(involuntary),
        "voluntary_per_turn": per_turn(voluntary),
        "involuntary_per_turn": per_turn(involuntary),
    }


def lines(found: dict[str, Any]) -> list[str]:
    """A summary as text: a line per worker and role."""
    out = []
    for pid, worker in found.items():
        out.append(
            f"worker {pid}: {worker['turns_per_s']} turns/s over {worker['seconds']} s; "
            f"all threads {_text(worker['all'])}"
        )
        for role, rates in worker["roles"].items():
            out.append(f"  {role:14} x{rates['threads']:<3} {_text(rates)}")
    return out


def _text(rates: dict[str, Any]) -> str:
    return (
        f"CPU {rates['cpu_s_per_s']} s/s, runnable {rates['runnable_s_per_s']} s/s; "
        f"switches/s vol {rates['voluntary_per_s']} invol {rates['involuntary_per_s']}; "
        f"a slice {rates['cpu_us_per_slice']} us, its wait {rates['runnable_us_per_slice']} us; "
        f"a turn: CPU {rates['cpu_ms_per_turn']} ms, runnable {rates['runnable_ms_per_turn']} "
        f"ms, vol {rates['voluntary_per_turn']} invol {rates['involuntary_per_turn']}"
    )


def row(
    path: Path, window: tuple[float, float], sampler: subprocess.Popen[bytes] | None
) -> dict[str, Any]:
    """A bench row's view: the probe's summary over the window, the sampler's split."""
    from bench import _offcpu

    found: dict[str, Any] = {"probe": summary(str(path), *window)}
    if sampler is not None:
        found["offcpu"] = _offcpu.finish(sampler, path)
    return found


def row_lines(found: dict[str, Any]) -> list[str]:
    """A bench row's view as the report's lines."""
    from bench import _offcpu

    out = ["threads, as the scheduler counts them:", *lines(found["probe"])]
    if found.get("offcpu"):
        out += _offcpu.lines(found["offcpu"])
    return out


def main(argv: list[str]) -> None:
    since, until = (float(argv[1]), float(argv[2])) if len(argv) >= 3 else (0.0, float("inf"))
    found = summary(argv[0], since, until)
    print("\n".join(lines(found)))
    sampled = Path(argv[0] + ".offcpu.json")
    if sampled.exists():
        from bench._offcpu import lines as offcpu_lines

        print("\n".join(offcpu_lines(json.loads(sampled.read_text()))))


if __name__ == "__main__":
    main(sys.argv[1:])
