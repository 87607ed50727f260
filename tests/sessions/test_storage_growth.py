"""A session's storage grows linearly with its length: a late turn adds no more bytes than an
early one (before versioned checkpoints, DBOS stored the whole history again every turn,
and turns 20 to 30 added half as much again as turns 5 to 15)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bench._storage_worker import run
from bench.storage_growth import marginals

#: a late turn may add this much more than an early one (a page's rounding on SQLite);
#: the quadratic store added 1.5 times as much here
MARGIN = 1.2


def test_late_turns_add_no_more_bytes_than_early_ones(tmp_path: Path) -> None:
    measured = asyncio.run(run(30, {5, 15, 20, 30}, tmp_path, env={}))
    assert measured["turns_counted"] == 30
    early, late = marginals(measured, {15: 5, 30: 20}).values()
    for part in ("dbos", "total"):
        assert 0 < late[part] <= early[part] * MARGIN, (part, early, late)
