"""The limit on places running at once in a worker (``EVE_TURN_LIMIT``): a turn over it is
answered 202 and waits as an accepted place, in order, until a running one ends; a worker
killed meanwhile runs it after its restart."""

from __future__ import annotations

import math
import time

import pytest

from eve.errors import ServerConfigError
from eve.sessions import accepted_sweep
from eve.sessions.settings import turn_limit
from eve.sessions.turn_limit import FLOOR, AdaptiveLimit, TurnLimit
from tests.conftest import AppFactory, wait_for_file
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import Server, count
from tests.sessions.inprocess import InProcessServer

RESPONSES = [call("hold"), say("held"), say("again")]


def _received(events: list[dict[str, object]]) -> list[object]:
    return [e["data"]["message"] for e in events if e["type"] == "message.received"]  # type: ignore[index]


def test_a_turn_over_the_limit_waits_accepted_and_starts_when_a_running_one_ends(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the sweep looks at every accepted place at once, every 0.2 s: it must leave the held
    # one alone, or it would start it past the limit
    monkeypatch.setattr(accepted_sweep, "GRACE_SECONDS", 0.0)
    root = scripted_app(make_app, RESPONSES, tools=("hold",))
    env = {"EVE_TURN_LIMIT": "1", "EVE_WORKER_TIMEOUT": "0.6"}
    server = InProcessServer(root, env=env).start()
    try:
        first = server.create("hold on")
        wait_for_file(root / f"hold-{first}.started")
        second = server.post("/session", {"message": "two"})
        assert second.status_code == 202, second.text
        waiter = second.json()["sessionId"]
        again = server.send(first, "again")
        assert again.status_code == 202, again.text
        limit: TurnLimit = server.http.app.state.service.turn_limit  # type: ignore[union-attr]
        time.sleep(0.5)  # two sweeps or more
        held = (limit.running, limit.waiting, limit.holds(waiter))
        started_early = (root / f"hold-{waiter}.started").exists()
        (root / "release").write_text("go")
        first_events = server.wait_for(first, count("session.waiting", 2))
        waiter_events = server.wait_for(waiter, count("session.waiting"))
    finally:
        server.stop()
    assert held == (1, 1, True) and not started_early
    assert _received(first_events) == ["hold on", "again"]
    assert _received(waiter_events) == ["two"]


def test_a_held_turn_runs_after_the_worker_is_killed_and_restarted(
    make_app: AppFactory,
) -> None:
    root = scripted_app(make_app, RESPONSES, tools=("hold",))
    server = Server(root, env={"EVE_TURN_LIMIT": "1", "EVE_WORKER_TIMEOUT": "1"}).start()
    try:
        first = server.create("hold on")
        wait_for_file(root / f"hold-{first}.started")
        waiter = server.create("two")  # accepted, held: the one place the limit allows runs
        server.kill()
        (root / "release").write_text("go")
        server.env["EVE_TURN_LIMIT"] = "off"
        server.start()
        first_events = server.wait_for(first, count("session.waiting"))
        waiter_events = server.wait_for(waiter, count("session.waiting"))
    finally:
        server.stop()
    assert _received(first_events) == ["hold on"]
    assert _received(waiter_events) == ["two"]


def test_the_adaptive_limit_cuts_from_what_runs_and_grows_while_places_wait() -> None:
    adaptive = AdaptiveLimit(target=0.01, busy_target=0.85)
    adaptive.look(0.002, busy=0.95, running=500, waiting=0)
    assert adaptive.limit == math.inf  # no lag: no limit
    adaptive.look(0.05, busy=0.5, running=500, waiting=0)
    assert adaptive.limit == math.inf  # a lag the worker's own CPU does not explain
    adaptive.look(0.05, busy=0.95, running=500, waiting=0)
    assert adaptive.limit == 450
    adaptive.look(0.05, busy=0.95, running=480, waiting=30)
    assert adaptive.limit == 450  # the last cut has not taken effect yet
    adaptive.look(0.05, busy=0.95, running=400, waiting=30)
    assert adaptive.limit == 360
    adaptive.look(0.001, busy=0.95, running=100, waiting=30)
    assert adaptive.limit == 360  # not reached: it does not grow
    adaptive.look(0.001, busy=0.95, running=360, waiting=30)
    assert adaptive.limit == 378
    adaptive.look(0.001, busy=0.95, running=378, waiting=0)
    assert adaptive.limit == 378  # nothing waits for more
    adaptive.look(1.0, busy=0.95, running=3, waiting=10)
    assert adaptive.limit == FLOOR  # a loop that lags for another reason still runs some


def test_the_limit_is_read_from_the_environment() -> None:
    assert turn_limit("") == "off" and turn_limit("off") == "off"
    assert turn_limit(" Auto ") == "auto" and turn_limit("200") == 200
    for bad in ("0", "-1", "lots", "1.5"):
        with pytest.raises(ServerConfigError, match="EVE_TURN_LIMIT must be auto, off or"):
            turn_limit(bad)
