"""What the scale benchmark's model drew and how the load arrived: in waves, or spread.

Each turn the clients recorded has its key (``_sleep_latency.py``), so its model time is
known without asking the server: a turn's overhead is its time less its own model time, and
the mean step the window's turns drew says whether the run's limit, N / (steps * mean), held.
The POSTs sent each second of the window, and how even they were over 100 ms bins, show
whether the sessions ran in phase: a few hundred ms with hundreds, then seconds with none. (A
client sends its next message as its turn ends: the turns ended each second count the same.)
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from typing import Any

from bench._sleep_latency import SleepSpec

#: the width of the finest bin: a wave's POSTs arrive within a few hundred ms
_FINE_SECONDS = 0.1


def overheads(done: list[dict[str, Any]], spec: SleepSpec) -> list[float]:
    """Each finished turn's time less its own model time."""
    return [t["turn_s"] - spec.turn_model_seconds(t["key"]) for t in done]


def drawn_step_mean(posted: list[dict[str, Any]], spec: SleepSpec) -> float | None:
    """The mean step latency the turns posted (and accepted) in the window drew."""
    keys = [t["key"] for t in posted if t["status"] == 202]
    if not keys:
        return None
    return sum(spec.turn_model_seconds(key) for key in keys) / (len(keys) * spec.steps)


def arrivals(turns: list[dict[str, Any]], window: tuple[float, float]) -> dict[str, Any]:
    """POSTs sent in each second of the window; how even they were, each second and each
    100 ms (the counts' coefficient of variation: about 1/sqrt(count) for arrivals at
    random, above 1 for waves); the POSTs of the busiest 100 ms and the 100 ms with none."""
    since, until = window
    sent = [t["sent"] for t in turns if since <= t["sent"] < until]
    seconds = max(1, math.floor(until - since))
    posts = _by_bin(sent, since, 1.0, seconds)
    fine = _by_bin(sent, since, _FINE_SECONDS, round(seconds / _FINE_SECONDS))
    return {
        "posts_by_second": posts,
        "posts_per_s_max": max(posts),
        "posts_per_s_cv": _cv(posts),
        "posts_per_100ms_cv": _cv(fine),
        "posts_busiest_100ms": max(fine),
        "posts_none_100ms": fine.count(0),
    }


def _by_bin(times: list[float], since: float, width: float, bins: int) -> list[int]:
    counted = Counter(int((at - since) / width) for at in times)
    return [counted.get(k, 0) for k in range(bins)]


def _cv(counts: list[int]) -> float | None:
    mean = statistics.fmean(counts)
    return round(statistics.pstdev(counts) / mean, 3) if mean else None


def line(row: dict[str, Any]) -> str:
    """The row's model and how its load arrived, for the report's section."""
    drawn = row.get("model_step_mean_s")
    model = f"model {row['model']}" + (
        f", mean step drawn {drawn} s by the window's turns" if drawn is not None else ""
    )
    fine = round(len(row["posts_by_second"]) / _FINE_SECONDS)
    return (
        f"{model}; POSTs a second of the window at most {row['posts_per_s_max']} (CV "
        f"{row['posts_per_s_cv']}), a 100 ms CV {row['posts_per_100ms_cv']}, the busiest "
        f"{row['posts_busiest_100ms']}, and {row['posts_none_100ms']} of {fine} with none"
    )
