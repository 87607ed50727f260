"""The event log redacts a batch of events in one pass: every row of the batch, none missed."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from eve.events import MessageAppendedData, SessionEvent
from eve.execution.events import EventEmitter
from eve.sessions.event_log import EventLog, Pending
from eve.sessions.store import SessionStore

SECRET = "ev-log-secret-value-0123"


async def events_saying(deltas: list[str]) -> list[SessionEvent]:
    made: list[SessionEvent] = []
    emitter = EventEmitter(made.append, session_id="ses_x")
    for delta in deltas:
        await emitter.emit(MessageAppendedData(turn_id="turn_0", step_index=0, message_delta=delta))
    return made


async def test_every_row_of_a_batch_is_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    store = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    store.create_session("ses_x")
    batches: list[int] = []
    append = store.append_events

    def counted(session_id: str, first: int, rows: Any, also: Any = ()) -> list[Any]:
        batches.append(len(rows))
        return append(session_id, first, rows, also)

    monkeypatch.setattr(store, "append_events", counted)
    said = [
        SECRET,
        f"in the middle {SECRET} of a row",
        "sk-AbCdEfGh0123456789",
        base64.b64encode(f"x{SECRET}".encode()).decode(),
        "nothing secret",
        f"{SECRET}\n{SECRET}",
    ]
    writer = EventLog(store).writer("ses_x")
    for event in await events_saying(said):
        writer.add(Pending(event=event))
    await writer.flush()
    stored = store.read_events("ses_x", 0)
    assert batches == [len(said)]  # one batch, so the batch path redacted them all
    assert len(stored) == len(said)
    for i, payload in enumerate(stored):
        assert ("[redacted]" in payload) == (i != 4)
        assert SECRET not in payload and "AbCdEfGh" not in payload
        assert SECRET[:8] not in payload.replace("[redacted]", "")
    assert '"message_delta":"nothing secret"' in stored[4]
    assert '"message_delta":"[redacted]\\n[redacted]"' in stored[5]
    store.close()
