"""``hook.failed`` in a replayed turn body: reported once per event, never renumbering it."""

from __future__ import annotations

from typing import Any, cast

from eve.events import HookFailedData, MessageReceivedData, TurnStartedData
from eve.execution.events import EventEmitter
from eve.sessions.event_log import Pending, SessionWriter
from eve.sessions.store import TurnProgress
from eve.sessions.turn_events import TurnEvents


class Collect:
    def __init__(self) -> None:
        self.items: list[Pending] = []

    def add(self, item: Pending) -> None:
        self.items.append(item)


async def emit_body(progress: TurnProgress, *, fails: bool) -> list[Pending]:
    writer = Collect()
    events = TurnEvents(cast(SessionWriter, writer), workflow_id="w", progress=progress)
    emitter = EventEmitter(events, session_id="s")
    await emitter.emit(TurnStartedData(turn_id="turn_0"))
    if fails:
        failed = HookFailedData(
            turn_id="turn_0", hook="h", source="s", event="turn.started", error="e"
        )
        await emitter.emit(failed)
    await emitter.emit(MessageReceivedData(turn_id="turn_0", message="hi"))
    return writer.items


def summary(items: list[Pending]) -> list[tuple[str, Any]]:
    return [(i.event.type, i.body_seq) for i in items]


async def test_a_report_has_no_body_position_of_its_own() -> None:
    written = await emit_body(TurnProgress(last_body_seq=-1, attempts={}), fails=True)
    assert summary(written) == [
        ("turn.started", 0),
        ("hook.failed", None),
        ("message.received", 1),
    ]


async def test_a_replay_skips_the_report_of_a_skipped_event() -> None:
    # the first run wrote turn.started and its report, then died
    again = await emit_body(TurnProgress(last_body_seq=0, attempts={}), fails=True)
    assert summary(again) == [("message.received", 1)]


async def test_a_hook_that_no_longer_fails_shifts_nothing() -> None:
    again = await emit_body(TurnProgress(last_body_seq=0, attempts={}), fails=False)
    assert summary(again) == [("message.received", 1)]
