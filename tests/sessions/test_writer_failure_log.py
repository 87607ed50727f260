"""An event writer whose database refuses a batch says so in one line, even when no one
waits for it: never asyncio's "Task exception was never retrieved" with a traceback."""

from __future__ import annotations

import asyncio
import gc
import logging
import sqlite3
from pathlib import Path

import pytest

from eve.sessions.event_log import EventLog, Pending
from eve.sessions.store import SessionStore
from tests.sessions.test_step_events import step_events


async def test_a_failed_batch_no_one_waits_for_is_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "eve.sqlite"
    store = SessionStore(f"sqlite:///{path}", busy_timeout=0.05)
    store.create_session("ses_x")
    # waits out a fault this long (db_retry), then gives up: long enough that a loaded
    # machine's first try (its busy timeout, 0.05 s) still leaves room to wait once
    store.retry_seconds = 1.0
    unretrieved: list[dict[str, object]] = []

    def seen(_: object, context: dict[str, object]) -> None:
        # the writer's own: a garbage collection here also finds tasks earlier tests of the
        # worker left behind (an HTTP client's, its loop closed), which are not its business
        future = context.get("future")
        coroutine = future.get_coro() if isinstance(future, asyncio.Task) else None
        if "SessionWriter" in getattr(coroutine, "__qualname__", ""):
            unretrieved.append(context)

    asyncio.get_running_loop().set_exception_handler(seen)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock past the busy timeout
    try:
        writer = EventLog(store).writer("ses_x")
        with caplog.at_level(logging.WARNING, logger="eve.sessions"):
            # an outage an earlier test of this worker left known ends with create_session
            # above ("reachable again"): only this fault's lines count
            caplog.clear()
            for event in await step_events(2):
                writer.add(Pending(event=event))
            task = writer.task
            assert task is not None
            await asyncio.wait([task])  # it ends; no one awaits its result
            del task, writer
            gc.collect()  # where asyncio would complain about an unretrieved exception
            await asyncio.sleep(0)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        store.close()
    assert unretrieved == []
    lines = [r.getMessage() for r in caplog.records if r.name == "eve.sessions"]
    # the store waits out the fault first (db_retry), then the writer gives up in one line
    assert lines == [
        "the session database is out of reach (OperationalError); waiting for it",
        "events of session ses_x not written: OperationalError",
    ]
    assert all(r.exc_info is None for r in caplog.records)
