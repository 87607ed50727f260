"""An event for a task its turn is about to start waits for it (``task_starts.py``): a
client that sends it the moment it reads ``task.started`` may come before the task's
workflow exists, and must not get a 409 for it."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from eve.sessions import task_starts
from tests.conftest import AppFactory
from tests.sessions.apps import TOOLS, call, say
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer
from tests.sessions.test_approvals import request_of
from tests.sessions.test_tasks import DELIVERY, app, of

#: the turn asks for approval of ``ship`` at step 0, then calls ``track`` at step 1
SCRIPT = [call("ship", item="anvil"), call("track"), say("it arrived")]
FILES = {"agent/tools/ship.py": TOOLS["ship"], "agent/tools/track.py": DELIVERY}


def _task_of_step_1(session: str) -> str:
    """``track``'s task id: ``<turn workflow>:task-<step>-<call id>``, known before it runs."""
    return f"{session}:turn-0:task-1-call_1_0"


def test_an_event_sent_before_its_task_starts_waits_for_it_and_is_delivered(
    make_app: AppFactory,
) -> None:
    root = app(make_app, FILES, SCRIPT)
    server = InProcessServer(root).start()
    try:
        session = server.create("ship and track it")
        request = request_of(server.wait_for(session, count("turn.waiting")))
        task_id = _task_of_step_1(session)
        with ThreadPoolExecutor(1) as pool:
            # sent while the turn is parked before the task: it waits for the task to start
            early = pool.submit(
                server.post,
                f"/session/{session}/tasks/{task_id}/events",
                {"name": "delivered", "data": {"at": "door"}},
            )
            server.answer(session, request["request_id"], "approve")
            sent: httpx.Response = early.result()
        assert sent.status_code == 202, sent.text
        events = server.wait_for(session, count("session.waiting"))
    finally:
        server.stop()
    [started] = of(events, "task.started")
    assert started["task_id"] == task_id
    [*_, result] = of(events, "action.result")
    assert json.loads(result["output"]) == {"delivered": {"at": "door"}}


def test_an_event_for_a_task_that_does_not_start_in_time_is_409(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(task_starts, "TASK_START_SECONDS", 0.3)
    root = app(make_app, FILES, SCRIPT)
    server = InProcessServer(root).start()
    try:
        session = server.create("ship and track it")
        server.wait_for(session, count("turn.waiting"))
        # the turn runs (parked on a person), but nothing starts the task meanwhile
        sent = server.post(
            f"/session/{session}/tasks/{_task_of_step_1(session)}/events", {"name": "delivered"}
        )
    finally:
        server.stop()
    assert sent.status_code == 409 and sent.json()["code"] == "task_not_waiting"
