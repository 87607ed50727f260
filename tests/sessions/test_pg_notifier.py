"""Event commits are notified on PostgreSQL after they commit, off the write transaction:
named by the store that sent them (its own listener skips them), kept and sent again when
the database fails a flush."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa

from eve.sessions.event_log import EventLog
from eve.sessions.pg_listener import PgListener
from eve.sessions.pg_notifier import EVENTS_CHANNEL, PgNotifier
from eve.sessions.store import EventRow, SessionStore

SESSION = "ses_notify"
#: far past anything these tests wait for, so no wait here ends by its timeout
PATIENCE = 20.0


def _sqlalchemy(url: str) -> str:
    return "postgresql+psycopg://" + url.split("://", 1)[1]


@pytest.fixture
def listening(postgres_url: str) -> Iterator[psycopg.Connection[Any]]:
    connection = psycopg.connect(postgres_url, autocommit=True)
    connection.execute(f"LISTEN {EVENTS_CHANNEL}")
    yield connection
    connection.close()


def _heard_until(connection: psycopg.Connection[Any], payload: str) -> list[str]:
    heard: list[str] = []
    deadline = time.monotonic() + PATIENCE
    while payload not in heard and time.monotonic() < deadline:
        heard += [n.payload for n in connection.notifies(timeout=0.2)]
    return heard


def test_an_append_is_notified_after_its_commit_with_the_store_s_origin(
    postgres_url: str, listening: psycopg.Connection[Any]
) -> None:
    store = SessionStore(_sqlalchemy(postgres_url))
    try:
        store.create_session(SESSION)
        rows = [
            EventRow(workflow_id=None, body_seq=None, step_key=None, attempt=None, payload="{}")
            for _ in range(3)
        ]
        store.append_events(SESSION, 0, rows)
        assert store.notifier is not None
        expected = f"{store.notifier.origin} {SESSION}:2"
        assert expected in _heard_until(listening, expected)
        # the rows were there before the notification was sent
        assert len(store.read_events(SESSION, 0)) == 3
    finally:
        store.close()


def _failing(url: str, failures: list[Exception]) -> sa.Engine:
    """An engine whose next statements raise ``failures``, one each."""
    engine = sa.create_engine(_sqlalchemy(url))

    def fail(*_args: object) -> None:
        if failures:
            raise failures.pop()

    sa.event.listen(engine, "before_cursor_execute", fail)
    return engine


def test_a_flush_the_database_failed_is_sent_again(
    postgres_url: str, listening: psycopg.Connection[Any], caplog: pytest.LogCaptureFixture
) -> None:
    gone = psycopg.OperationalError("the server went away")
    failures: list[Exception] = [sa.exc.OperationalError("SELECT", {}, gone)]
    engine = _failing(postgres_url, failures)
    notifier = PgNotifier(engine)
    try:
        notifier.committed(SESSION, 4)
        expected = f"{notifier.origin} {SESSION}:4"
        assert expected in _heard_until(listening, expected)
        assert not failures and notifier.flushes >= 1
    finally:
        notifier.close()
        engine.dispose()
    # waited out as the store's calls are, and said so as they do (``db_retry.py``)
    assert "the session database is out of reach (OperationalError)" in caplog.text
    assert "the session database is reachable again" in caplog.text


def test_a_flush_refused_for_another_reason_is_dropped_and_said(
    postgres_url: str, listening: psycopg.Connection[Any], caplog: pytest.LogCaptureFixture
) -> None:
    """Only the refused flush's commits are dropped: one that came while it was under way
    is sent (it was dropped too, when the test's next commit came at that moment)."""
    engine = sa.create_engine(_sqlalchemy(postgres_url))
    notifier = PgNotifier(engine)
    refusals = [RuntimeError("not an outage")]

    def refuse(*_args: object) -> None:
        if refusals:
            notifier.committed(SESSION, 5)  # a commit while the flush is under way
            raise refusals.pop()

    sa.event.listen(engine, "before_cursor_execute", refuse)
    try:
        notifier.committed(SESSION, 4)
        later = f"{notifier.origin} {SESSION}:5"
        heard = _heard_until(listening, later)
        # the refused one was not sent again: another would meet the same refusal
        assert later in heard and f"{notifier.origin} {SESSION}:4" not in heard
    finally:
        notifier.close()
        engine.dispose()
    assert "event notifications not sent: RuntimeError" in caplog.text


async def test_the_listener_skips_its_own_store_s_notifications(postgres_url: str) -> None:
    here = SessionStore(_sqlalchemy(postgres_url))
    try:
        listener = PgListener(here.engine, EventLog(here).feeds)
        await listener.start()
        assert here.notifier is not None
        # as its thread hears them; the loop hands them over only once this test awaits
        listener._heard_one(f"{here.notifier.origin} {SESSION}:7")
        assert listener._heard == {}  # its writer told the feeds as it committed
        listener._heard_one(f"0123456789ab {SESSION}:7")
        assert listener._heard == {SESSION: 7}  # another worker's commit
        await listener.stop()
    finally:
        here.close()
