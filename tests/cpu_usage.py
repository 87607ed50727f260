"""``-p tests.cpu_usage``: where a run's CPU goes, by test module (opt-in, for measuring).

Each worker writes, for each test module, the seconds of CPU its process spent on the
module's tests (setup, call and teardown) and what its waited-for children spent then
(``resource.getrusage``), and, once, what its start and collection cost before the first
test. Children a test's process does not wait for itself are not in a module's figure:
the servers the fork server forks count in the worker's ``fork server`` line when it stops.
``EVE_TEST_CPU_DIR`` names the directory of the workers' files (one JSON per process);
``python -m tests.cpu_usage DIR`` sums them, largest first.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

#: the directory each process writes its figures to
DIR_VARIABLE = "EVE_TEST_CPU_DIR"


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _process_started() -> float:
    """Seconds since this process started (``/proc/self/stat``'s start time, in ticks)."""
    with open("/proc/self/stat") as stat:
        start_ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime") as uptime:
        now = float(uptime.read().split()[0])
    return now - start_ticks / os.sysconf("SC_CLK_TCK")


class _Recorder:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.modules: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
        self.before_first: dict[str, float] | None = None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        if self.before_first is None:
            self.before_first = {
                "wall": _process_started(),
                "self": _cpu(resource.RUSAGE_SELF),
                "children": _cpu(resource.RUSAGE_CHILDREN),
            }
        wall, own, children = (
            time.monotonic(),
            _cpu(resource.RUSAGE_SELF),
            _cpu(resource.RUSAGE_CHILDREN),
        )
        yield
        totals = self.modules[item.nodeid.split("::", 1)[0]]
        totals[0] += _cpu(resource.RUSAGE_SELF) - own
        totals[1] += _cpu(resource.RUSAGE_CHILDREN) - children
        totals[2] += time.monotonic() - wall

    def pytest_unconfigure(self) -> None:
        figures = {
            "before_first": self.before_first,
            "modules": dict(self.modules),
            "end": {"self": _cpu(resource.RUSAGE_SELF), "children": _cpu(resource.RUSAGE_CHILDREN)},
        }
        name = os.environ.get("PYTEST_XDIST_WORKER", "main")
        (self.directory / f"{name}-{os.getpid()}.json").write_text(json.dumps(figures))


def pytest_configure(config: pytest.Config) -> None:
    directory = os.environ.get(DIR_VARIABLE)
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        config.pluginmanager.register(_Recorder(Path(directory)), "eve-cpu-usage")


def summarize(directory: Path) -> str:
    modules: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    lines = []
    for path in sorted(directory.glob("*.json")):
        figures = json.loads(path.read_text())
        for module, values in figures["modules"].items():
            for index, value in enumerate(values):
                modules[module][index] += value
        first, end = figures["before_first"], figures["end"]
        if first:
            lines.append(
                f"{path.stem}: before the first test {first['wall']:.1f} s, "
                f"{first['self']:.1f} CPU-s (+{first['children']:.1f} children); "
                f"at the end {end['self']:.1f} + {end['children']:.1f} children"
            )
    ranked = sorted(modules.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))
    total_self = sum(v[0] for v in modules.values())
    total_children = sum(v[1] for v in modules.values())
    lines.append(f"tests: {total_self:.1f} CPU-s in workers, {total_children:.1f} in children")
    lines += [f"{s + c:7.1f} {s:7.1f} {c:7.1f} {w:7.1f}  {m}" for m, (s, c, w) in ranked]
    return "\n".join(lines)


if __name__ == "__main__":
    print(summarize(Path(sys.argv[1])))
