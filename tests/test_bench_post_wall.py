"""The scale benchmark's wall-clock split of a POST (``bench/_post_wall.py``): the marks a
worker adds to ``Server-Timing`` and the row's split of a client's POST time by them."""

from __future__ import annotations

import os
import time

import pytest

from bench._post_wall import post_wall
from bench._scale_clients import server_timing
from bench.scale import _post_walls
from eve.server import server_timing as timing_module
from eve.server.serving_loop import ServingLoop
from eve.sessions.claim_now import ClaimTiming


def test_marks_say_when_a_post_was_read_and_answered(monkeypatch: pytest.MonkeyPatch) -> None:
    # restored after the test: ``post_wall`` replaces both for its process
    monkeypatch.setattr(timing_module, "timing", timing_module.timing)
    monkeypatch.setattr(ServingLoop, "_turn_due", ServingLoop._turn_due)
    post_wall()
    loop = ServingLoop(watch=None)
    try:
        assert loop._turn_due(time.perf_counter(), 0.0)  # a turn due: noted
    finally:
        loop.close()
    time.sleep(0.002)
    before = time.time()
    found = server_timing({b"server-timing": timing_module.timing(0.001, ClaimTiming())})
    assert found["answer_s"] == pytest.approx(0.001)
    assert float(found["answered_at"]) - float(found["read_at"]) == pytest.approx(0.001, abs=2e-6)
    assert before - 0.01 <= float(found["read_at"]) <= float(found["answered_at"]) <= time.time()
    assert float(found["turn_at"]) <= float(found["read_at"])
    assert found["worker"] == str(os.getpid())


def test_a_post_is_split_around_the_server_by_worker() -> None:
    def post(worker: str, turn_at: float) -> dict[str, object]:
        return {
            "sent": 100.0, "post_s": 0.05, "answer_s": 0.02, "read_at": "100.02",
            "answered_at": "100.04", "worker": worker, "turn_at": str(turn_at),
        }  # fmt: skip

    split = _post_walls([post("1", 100.01), post("2", 99.9)])
    whole = split["post_walls"]
    assert whole["posts"] == 2
    assert whole["before_p95_ms"] == pytest.approx(20.0)
    assert whole["after_p95_ms"] == pytest.approx(10.0)
    assert whole["turned_pct"] == 50.0  # the second's last turn came before it was sent
    assert split["post_walls_by_worker"]["1"]["to_look_p50_ms"] == pytest.approx(10.0)
    assert split["post_walls_by_worker"]["1"]["in_turn_p50_ms"] == pytest.approx(10.0)
    assert split["post_walls_by_worker"]["2"]["to_look_p50_ms"] is None
    assert _post_walls([{"sent": 1.0, "post_s": 0.1, "answer_s": 0.05}]) == {}
