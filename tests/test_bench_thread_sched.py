"""The thread probe and the off-CPU sampler (``bench/_thread_sched.py``, ``bench/_offcpu.py``):
what they read of real threads in ``/proc`` and how they sum it up."""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from bench import _offcpu, _thread_sched
from bench._offcpu import Target, category, gil_base, split

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/task").is_dir() or os.uname().machine != "x86_64",
    reason="reads Linux's /proc; system call numbers of x86-64",
)


@contextmanager
def parked() -> Iterator[threading.Thread]:
    """A thread asleep on a condition (a futex) until the block ends."""
    done = threading.Event()
    thread = threading.Thread(target=done.wait, name="eve-writer")
    thread.start()
    time.sleep(0.05)
    try:
        yield thread
    finally:
        done.set()
        thread.join()


def _spin(seconds: float) -> None:
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass


def test_a_thread_s_role_is_told_by_its_name_or_what_it_runs() -> None:
    assert _thread_sched.role_of("anything", main=True) == "loop"
    assert _thread_sched.role_of("eve-writer", main=False) == "lane"
    assert _thread_sched.role_of("eve-turn_3", main=False) == "turn"
    assert _thread_sched.role_of("Thread-4", main=False, target="dbos._queue.f") == "dbos"
    assert _thread_sched.role_of("eve-wal-checkpoints", main=False) == "other_eve-wal-checkpoints"
    assert _thread_sched.role_of("Thread-12 (run)", main=False) == "other_Thread"


def test_a_thread_s_counters_grow_as_it_runs_and_sleeps() -> None:
    def work() -> None:
        _spin(0.03)
        time.sleep(0.01)

    thread = threading.Thread(target=work)
    thread.start()
    tid = thread.native_id
    assert tid is not None
    before = _thread_sched.task_counters(os.getpid(), tid)
    thread.join()
    mine = _thread_sched.task_counters(os.getpid(), threading.get_native_id())
    assert mine is not None and mine[0] > 0  # this thread has run
    assert before is not None
    # the thread has ended: nothing to read, once the kernel has reaped it (``join``
    # returns when Python is done with the thread, a moment before it leaves the kernel)
    deadline = time.monotonic() + 10
    while _thread_sched.task_counters(os.getpid(), tid) is not None:
        assert time.monotonic() < deadline, "the ended thread's task is still in /proc"
        time.sleep(0.01)


def test_a_snapshot_names_the_loop_s_thread_and_the_lane() -> None:
    with parked() as lane:
        found = _thread_sched.snapshot(threading.get_native_id())
    assert found[str(threading.get_native_id())][0] == "loop"
    role, name, run, wait, slices, voluntary, _ = found[str(lane.native_id)]
    assert (role, name) == ("lane", "eve-writer")
    assert voluntary >= 1 and slices >= 1 and run > 0 and wait >= 0


def test_the_interpreter_lock_s_futex_is_where_a_thread_waits_for_it() -> None:
    futex = _thread_sched.gil_futex()
    assert futex is not None
    base = gil_base(futex)
    assert base % 8 == 0 and futex - base in (40, 44)
    waiting = f"202 {futex:#x} 0x89 0x0 0x7f00 0x0 0xffffffff 0x7f00 0x7f00"
    assert category("1 (python) S 0", waiting, gil=base) == "gil: take"
    handing = f"202 {base + 128:#x} 0x89 0x0 0x0 0x0 0xffffffff 0x7f00 0x7f00"
    assert category("1 (py thon) S 0", handing, gil=base) == "gil: hand-over"


def test_a_sleeping_thread_s_call_is_read_from_proc() -> None:
    with parked() as thread:
        where = f"/proc/self/task/{thread.native_id}"
        stat, syscall = Path(f"{where}/stat").read_text(), Path(f"{where}/syscall").read_text()
    assert category(stat, syscall, gil=None) == "futex: other"
    assert category("7 (a) R 1", "running", gil=None) == "R"
    assert category("7 (a) D 1", "74 0x3 0x0", gil=None) == "fsync (D)"
    assert category("7 (a) S 1", "281 0x3 0x0", gil=None) == "epoll_wait"
    assert category("7 (a) S 1", "999 0x0", gil=None) == "syscall 999"


def test_the_sampler_splits_a_sleeping_thread_s_time() -> None:
    with parked() as thread:
        assert thread.native_id is not None
        watched = [Target(pid=os.getpid(), tid=thread.native_id, role="lane", gil=None)]
        found = _offcpu.sample(watched, seconds=0.2, rate=200)
    (only,) = found["threads"]
    assert only["samples"] >= 20 and only["running_samples_pct"] == 0.0
    assert set(only["asleep_s_per_s"]) == {"futex: other"}
    assert only["asleep_s_per_s"]["futex: other"] > 0.9
    assert "worker" in _offcpu.lines(found)[1]


def test_a_split_shares_the_time_asleep_by_the_samples() -> None:
    target = Target(pid=1, tid=2, role="loop", gil=None)
    target.counts = Counter({"R": 50, "epoll_wait": 30, "gil: take": 10})
    target.start, target.end = (0, 0), (400_000_000, 100_000_000)  # in 1 s
    found = split(target, 1.0)
    assert found["on_cpu_s_per_s"] == 0.4 and found["runnable_s_per_s"] == 0.1
    assert found["asleep_s_per_s"] == {"epoll_wait": 0.375, "gil: take": 0.125}


def test_the_sampler_finds_the_threads_the_probe_named(tmp_path: Path) -> None:
    probe = tmp_path / "sched.jsonl"
    rows = [
        {"pid": 5, "t": 1.0, "gil_futex": 0x1000 + 44},
        {"pid": 5, "t": 2.0, "turns": 0, "threads": {"5": ["loop"], "6": ["lane"], "7": ["read"]}},
    ]
    probe.write_text("".join(json.dumps(row) + "\n" for row in rows))
    found = _offcpu.targets(probe, [5], patience=0)
    assert [(t.tid, t.role, t.gil) for t in found] == [(5, "loop", 0x1000), (6, "lane", 0x1000)]


def test_the_summary_rates_each_role_a_second_and_a_turn(tmp_path: Path) -> None:
    probe = tmp_path / "sched.jsonl"
    ms = 1_000_000
    rows = [
        {"pid": 9, "t": 0.0, "gil_futex": None},
        {"pid": 9, "t": 10.0, "turns": 100, "threads": {"9": ["loop", "MainThread", *[0] * 5]}},
        {
            "pid": 9,
            "t": 12.0,
            "turns": 300,
            "threads": {
                "9": ["loop", "MainThread", 1000 * ms, 200 * ms, 50, 400, 100],
                # new since the line before: counted from nothing
                "11": ["turn", "eve-turn_0", 100 * ms, 0, 4, 20, 0],
            },
        },
        {"pid": 9, "t": 99.0, "turns": 900, "threads": {}},  # past the window
    ]
    probe.write_text("".join(json.dumps(row) + "\n" for row in rows))
    found = _thread_sched.summary(str(probe), 5.0, 12.0)["9"]
    assert found["turns"] == 200 and found["turns_per_s"] == 100.0
    loop = found["roles"]["loop"]
    assert loop["cpu_s_per_s"] == 0.5 and loop["runnable_s_per_s"] == 0.1
    assert loop["cpu_ms_per_turn"] == 5.0 and loop["voluntary_per_s"] == 200.0
    assert loop["involuntary_per_turn"] == 0.5
    assert found["roles"]["turn"]["cpu_s_per_s"] == 0.05
    assert found["all"]["cpu_s_per_s"] == 0.55
    assert list(found["roles"]) == ["loop", "turn"]  # the busiest first
    assert any("loop" in line for line in _thread_sched.lines({"9": found}))


def test_the_probe_writes_a_line_a_second(tmp_path: Path) -> None:
    probe, stop = tmp_path / "sched.jsonl", threading.Event()
    _thread_sched.thread_sched(str(probe), turns=lambda: 7, stop=stop)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (
        not probe.exists() or len(probe.read_text().splitlines()) < 3
    ):
        time.sleep(0.1)
    stop.set()
    first, second, third = (json.loads(line) for line in probe.read_text().splitlines()[:3])
    assert first["gil_futex"] is not None
    assert second["turns"] == 7 and str(threading.get_native_id()) in second["threads"]
    assert _thread_sched.summary(str(probe))[str(os.getpid())]["roles"]["loop"]["threads"] == 1
    assert third["t"] > second["t"]
