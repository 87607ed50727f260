"""What a turn's body commits: its start in one transaction, its end in one.

Each transaction costs a turn a thread hop and a commit, and the server's CPU per turn is
mostly those (``bench/scale.py``). The body's start reads its progress, step records,
checkpoint, whether it was cancelled and the log's next index, and marks its place started,
at once; each step's record commits with the step's events; its end writes its last events
with its checkpoint and the end of its place.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa

from tests.conftest import AppFactory
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer

#: eve's tables (DBOS's are its own business)
_EVE = re.compile(r"\beve_(events|sessions|checkpoints|accepted|step_records)\b")
#: an event's type in the parameters of an insert into the log
_TYPE = re.compile(r'\\?"type\\?":\\?"([a-z_.]+)')


@contextmanager
def committed() -> Iterator[list[list[str]]]:
    """The statements on eve's tables of each transaction committed in this process meanwhile
    (every engine: the app's are made inside it)."""
    done: list[list[str]] = []
    open_: dict[int, list[str]] = {}
    lock = threading.Lock()

    def statement(conn: Any, _cursor: Any, sql: str, parameters: Any, *_args: Any) -> None:
        if _EVE.search(sql):
            with lock:
                made = open_.setdefault(id(conn), [])
                made.append(" ".join(sql.split())[:200])
                if sql.startswith("INSERT INTO eve_events"):
                    made.extend(f"event {kind}" for kind in _TYPE.findall(str(parameters)))

    def commit(conn: Any) -> None:
        with lock:
            if (statements := open_.pop(id(conn), None)) is not None:
                done.append(statements)

    def rollback(conn: Any) -> None:
        with lock:
            open_.pop(id(conn), None)

    sa.event.listen(sa.engine.Engine, "before_cursor_execute", statement)
    sa.event.listen(sa.engine.Engine, "commit", commit)
    sa.event.listen(sa.engine.Engine, "rollback", rollback)
    try:
        yield done
    finally:
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", statement)
        sa.event.remove(sa.engine.Engine, "commit", commit)
        sa.event.remove(sa.engine.Engine, "rollback", rollback)


def having(transactions: list[list[str]], head: str) -> list[list[str]]:
    return [tx for tx in transactions if any(s.startswith(head) for s in tx)]


def test_a_turn_starts_in_one_transaction_and_ends_in_one(make_app: AppFactory) -> None:
    root = scripted_app(make_app, [say("one"), say("two")])
    server = InProcessServer(root).start()
    try:
        session = server.create("first")
        server.wait_for(session, count("session.waiting"))
        with committed() as transactions:
            assert server.send(session, "second").status_code == 202
            server.wait_for(session, count("session.waiting", 2))
    finally:
        server.stop()
    [start] = having(transactions, "SELECT eve_events.step_key")
    for read in (
        "SELECT eve_step_records.step_key",  # its step records
        "SELECT eve_sessions.checkpoint_version",  # the checkpoint it starts from ...
        "UPDATE eve_accepted SET state=? WHERE eve_accepted.workflow_id",  # its place started
    ):
        assert any(s.startswith(read) for s in start), (read, start)
    # ... in one statement with whether it was cancelled already and where its writer starts
    [session] = [s for s in start if s.startswith("SELECT eve_sessions.checkpoint_version")]
    assert "eve_sessions.cancel_workflow_id" in session
    assert "(SELECT max(eve_events.idx)" in session
    [end] = having(transactions, "INSERT INTO eve_checkpoints")
    # the checkpoint that counts the turn, with the turn's end and its last event, and its
    # place done: all in one
    for write in (
        "event turn.completed",
        "event session.waiting",
        "UPDATE eve_accepted SET input=?, state=?",
    ):
        assert any(s.startswith(write) for s in end), (write, end)
    # the turn's end is the last of its events: none is written after its checkpoint
    assert transactions.index(end) == max(
        transactions.index(tx) for tx in having(transactions, "INSERT INTO eve_events")
    )
    # nobody read them on their own (the cancel watcher's tick, which asks about every
    # running turn at once, ``WHERE cancel_workflow_id IN``, may come in a slow run)
    for alone in (
        "SELECT max(eve_events.idx)",
        "SELECT eve_sessions.cancel_workflow_id FROM eve_sessions WHERE eve_sessions.id",
    ):
        assert having(transactions, alone) == [], alone


def test_a_sessions_first_turn_starts_from_no_checkpoint_without_asking_again(
    make_app: AppFactory,
) -> None:
    root = scripted_app(make_app, [say("one")])
    server = InProcessServer(root).start()
    try:
        with committed() as transactions:
            session = server.create("first")
            server.wait_for(session, count("session.waiting"))
    finally:
        server.stop()
    # the start's one read says there is none (no version, nothing an older eve kept)
    [start] = having(transactions, "SELECT eve_events.step_key")
    assert having(transactions, "SELECT eve_sessions.checkpoint_version") == [start]


def test_a_steps_record_commits_with_its_events_never_before_them(make_app: AppFactory) -> None:
    """A record rides in the writer's transaction after its step's events (no commit of its
    own): a step found recorded has all its events in the log or in its record."""
    root = scripted_app(make_app, [call("leak"), say("done")], tools=("leak",))
    # the commit each row of eve's log and step records went in, by step key
    commits: list[tuple[str, str | None]] = []
    open_: dict[int, list[tuple[str, str | None]]] = {}
    lock = threading.Lock()

    def statement(conn: Any, _cursor: Any, sql: str, parameters: Any, *_args: Any) -> None:
        table = next((t for t in ("eve_events", "eve_step_records") if f"INTO {t} " in sql), None)
        if table is not None:
            rows = parameters if isinstance(parameters, list) else [parameters]
            if table == "eve_events" and not isinstance(parameters, list):
                # a batch is one statement, its rows' values one after another
                # (``event_inserts.py``): seven columns a row
                rows = [parameters[n : n + 7] for n in range(0, len(parameters), 7)]
            key = 4 if table == "eve_events" else 1  # step_key's place among the columns
            with lock:
                open_.setdefault(id(conn), []).extend((table, row[key]) for row in rows)

    def commit(conn: Any) -> None:
        with lock:
            if rows := open_.pop(id(conn), []):  # (the commits of others' rows: DBOS's)
                commits.extend([*rows, ("COMMIT", None)])

    server = InProcessServer(root).start()
    sa.event.listen(sa.engine.Engine, "before_cursor_execute", statement)
    sa.event.listen(sa.engine.Engine, "commit", commit)
    try:
        session = server.create("count")
        server.wait_for(session, count("session.waiting"))
    finally:
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", statement)
        sa.event.remove(sa.engine.Engine, "commit", commit)
        server.stop()
    for step in ("step:0", "step:1"):
        [record] = [i for i, row in enumerate(commits) if row == ("eve_step_records", step)]
        events = [i for i, row in enumerate(commits) if row == ("eve_events", step)]
        assert events and max(events) < record, (step, commits)
        # no commit between the step's last event and its record: the same transaction
        # or, if that one was under way already, the next one (which may hold only it)
        assert commits[max(events) : record].count(("COMMIT", None)) <= 1, (step, commits)
