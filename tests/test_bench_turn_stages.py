"""The turn-stages report (``bench/_turn_stages.py``): a turn's overhead split at its model
calls, and the executor's calls its task made while it ran, from the server's rows and the
clients' records."""

from __future__ import annotations

import json
from pathlib import Path

from bench._turn_stages import report

TASK = 7


def _model(step: int, entered: float, woke: float) -> dict[str, object]:
    return {"model": "c.0", "step": step, "task": TASK, "in": entered, "drawn": 2.0,
            "woke": woke, "pid": 1}  # fmt: skip


def _call(lane: str, at: float, ran: float, done: float, back: float, task: int = TASK) -> dict:
    return {"call": lane, "task": task, "at": at, "ran": ran, "done": done, "back": back,
            "pid": 1}  # fmt: skip


def test_a_turn_s_overhead_is_split_at_its_model_calls(tmp_path: Path) -> None:
    # sent at 100.0, answered 10 ms later, ended at 107.0: 1 s over its 6 s of model time
    rows = [
        _model(0, 100.2, 102.25),  # 190 ms after the 202, woke 50 ms late
        _model(1, 102.45, 104.45),
        _model(2, 104.55, 106.6),
        _call("write", 100.05, 100.08, 100.09, 100.1),
        _call("turn", 102.3, 102.31, 102.32, 102.4),
        _call("turn", 102.3, 102.3, 102.3, 102.3, task=8),  # another task's
        _call("turn", 99.0, 99.0, 99.0, 99.0),  # before the turn: a task id used again
        {"lag": 0.004, "t": 101.0, "queued": 12, "deferred": 0.1},
    ]
    stages = tmp_path / "stages.jsonl"
    stages.write_text("".join(json.dumps(row) + "\n" for row in rows))
    turns = [{"key": "c.0", "sent": 100.0, "post_s": 0.01, "ended": 107.0}]
    (tmp_path / "clients-0.json").write_text(json.dumps({"turns": turns}))
    found = report(stages, tmp_path, since=99.5, until=109.5)
    assert found["turns"] == 1
    assert found["202 to step 0's call"].startswith("p50 190.0 ")
    assert found["step 0 wake to step 1's call"].startswith("p50 200.0 ")
    assert found["step 0 overrun"].startswith("p50 50.0 ")
    assert found["step 1 overrun"].startswith("p50 0.0 ")
    assert found["last wake to session.waiting"].startswith("p50 400.0 ")
    assert found["overhead (all)"].startswith("p50 1000.0 ")
    # the turn's own task: one write (30 ms queued, 20 ms run and back), one turns' call
    assert found["write queue a turn"].startswith("p50 30.0 ")
    assert found["write run and back a turn"].startswith("p50 20.0 ")
    assert found["turn calls a turn"].startswith("p50 1.0 ")
    assert found["all turn: calls/s"] == 0.2  # two in the 10 s window, whoever made them
    assert found["a turn's callback's wait in the slices' queue"].startswith("p50 100.0 ")
