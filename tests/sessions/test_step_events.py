"""A step's events ride in its record: a replay appends the ones that never reached the log."""

from __future__ import annotations

import json
from pathlib import Path

from eve.events import MessageAppendedData, SessionEvent
from eve.execution.events import EventEmitter
from eve.sessions.event_log import EventLog, Pending
from eve.sessions.store import SessionStore
from eve.sessions.turn_events import TurnEvents

WORKFLOW = "ses_x:turn-0"


async def step_events(n: int) -> list[SessionEvent]:
    made: list[SessionEvent] = []
    emitter = EventEmitter(made.append, session_id="ses_x")
    for i in range(n):
        await emitter.emit(
            MessageAppendedData(turn_id="turn_0", step_index=0, message_delta=str(i))
        )
    return made


async def test_a_replay_appends_only_the_missing_tail_of_a_steps_events(tmp_path: Path) -> None:
    store = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    store.create_session("ses_x")
    log = EventLog(store)
    recorded = await step_events(4)
    # the first run: the step recorded all four, but the process died after two were written
    first = TurnEvents(
        log.writer("ses_x"), workflow_id=WORKFLOW, progress=store.turn_progress(WORKFLOW)
    )
    async with first.step("step:0") as attempt:
        for event in recorded[:2]:
            first(event)
    await first.flush()
    assert attempt == 0 and first.step_events == recorded[:2]

    # the recovered run gets the step back from its record instead of running it
    progress = store.turn_progress(WORKFLOW)
    assert progress.written == {("step:0", 0): 2}
    again = TurnEvents(log.writer("ses_x"), workflow_id=WORKFLOW, progress=progress)
    again.replayed("step:0", 0, recorded)
    await again.flush()
    # a replay of a step whose events are all written appends nothing
    again.replayed("step:0", 0, recorded)
    await again.flush()

    lines = [json.loads(p) async for p in log.read("ses_x", 0, follow=False)]
    store.close()
    assert [e["meta"]["index"] for e in lines] == list(range(4))
    assert [e["data"]["message_delta"] for e in lines] == ["0", "1", "2", "3"]
    assert all("attempt" not in e["data"] for e in lines)


async def test_events_still_pending_at_shutdown_are_written(tmp_path: Path) -> None:
    store = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    store.create_session("ses_x")
    log = EventLog(store)
    for event in await step_events(3):
        log.writer("ses_x").add(Pending(event=event))
    await log.drain()  # what the service does when it stops, before closing the store
    assert len(store.read_events("ses_x", 0)) == 3
    store.close()
