"""The turn's writes compiled once on SQLite send SQLite what ``Connection.execute`` sent."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from eve.sessions.accepted import _ACCEPT, _FINISH, _HEAD, _STARTED
from eve.sessions.prepared_sql import plain_rows, run_prepared
from eve.sessions.step_records import _NEW_RECORD, _RECORDS
from eve.sessions.store import (
    _BODY_EVENT,
    _BODY_START,
    _CLAIM_TURN,
    _CURRENT_CHECKPOINT,
    _CURRENT_VERSION,
    _NEW_CHECKPOINT,
    _NEXT_EVENT,
    _PROGRESS,
    _RECYCLE_CHECKPOINT,
    SessionStore,
)
from eve.sessions.tables import events

T = TypeVar("T")
_PLACE = {
    "session_id": "ses_a",
    "turn": 1,
    "kind": "turn",
    "input": '{"parts":[]}',
    "state": "accepted",
    "workflow_id": "ses_a:turn-1",
    "reruns": 0,
    "accepted_at": 1700000000.5,
}
_RECORD = {"workflow_id": "ses_a:turn-1", "step_key": "model:0", "record": "{}", "recorded_at": 1.5}
#: the turn's writes in the order a turn makes them, each with its values
WRITES: list[tuple[Any, dict[str, Any]]] = [
    (_ACCEPT, _PLACE),
    (_STARTED, {"b_workflow": "ses_a:turn-1"}),
    (_NEW_RECORD["sqlite"], _RECORD),
    (_NEW_RECORD["sqlite"], _RECORD),  # a record there already: no row, rowcount 0
    (
        _RECYCLE_CHECKPOINT,
        {"b_session": "ses_a", "b_version": 1, "b_data": "{}", "b_saved_by": "w"},
    ),
    (_NEW_CHECKPOINT, {"session_id": "ses_a", "version": 1, "data": "{}", "saved_by": "w"}),
    (_CURRENT_VERSION, {"b_session": "ses_a", "b_version": 1}),
    (_FINISH, {"b_workflow": "ses_a:turn-1"}),
]


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[SessionStore, SessionStore]]:
    made = []
    for name in ("executed", "prepared"):
        store = SessionStore(f"sqlite:///{tmp_path / name}.sqlite")
        store.create_session("ses_a")
        made.append(store)
    yield made[0], made[1]
    for store in made:
        store.close()


def _sent(store: SessionStore, run: Any) -> tuple[list[tuple[str, Any, int]], list[Any]]:
    """What each write sent SQLite (its SQL and parameters) and its row count, and the
    rows the tables hold after them all."""
    sent: list[tuple[str, Any]] = []
    writing: list[Connection] = []

    def seen(c: Connection, _cursor: Any, sql: str, params: Any, *_: Any) -> None:
        # only the writes' connection: the WAL checkpoints' thread may use the engine too
        if c in writing:
            sent.append((sql, tuple(params)))

    sa.event.listen(store.engine, "before_cursor_execute", seen)
    try:
        with store.engine.begin() as c:
            writing.append(c)
            counts = [run(c, statement, values).rowcount for statement, values in WRITES]
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", seen)
    reads = [
        "SELECT * FROM eve_accepted",
        "SELECT * FROM eve_step_records",
        "SELECT * FROM eve_checkpoints",
        "SELECT id, checkpoint, checkpoint_version FROM eve_sessions",  # not when it was made
    ]
    with store.engine.connect() as c:
        rows = [list(c.exec_driver_sql(read)) for read in reads]
    return [(*each, count) for each, count in zip(sent, counts, strict=True)], rows


def _execute(c: Connection, statement: Any, values: dict[str, Any]) -> Any:
    return c.execute(statement, values)


def _alike(stores: tuple[SessionStore, SessionStore], seen: Callable[..., T]) -> T:
    """What ``seen`` finds of the statements run by ``execute`` on one store, the same as
    of them run by ``run_prepared`` on the other."""
    executed, prepared = stores
    by_execute = seen(executed, _execute)
    assert seen(prepared, run_prepared) == by_execute
    return by_execute


def test_the_turns_writes_send_what_execute_sent_and_write_the_same_rows(
    stores: tuple[SessionStore, SessionStore],
) -> None:
    by_execute = _alike(stores, _sent)
    # every write landed, but the record that was there already and the recycle (no
    # version two before this one)
    assert [count for *_, count in by_execute[0]] == [1, 1, 1, 0, 0, 1, 1, 1]


def test_a_statement_is_compiled_once_per_set_of_names(
    stores: tuple[SessionStore, SessionStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, store = stores
    compiled: list[Any] = []
    compile_ = sa.sql.ClauseElement.compile

    def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
        compiled.append(self)
        return compile_(self, *args, **kwargs)

    monkeypatch.setattr(sa.sql.ClauseElement, "compile", counting)
    with store.engine.begin() as c:
        for turn in range(3):
            run_prepared(c, _ACCEPT, {**_PLACE, "turn": turn, "workflow_id": f"w{turn}"})
        # other names: another compiled form
        run_prepared(c, _ACCEPT, {k: v for k, v in _PLACE.items() if k != "input"} | {"turn": 9})
    assert compiled == [_ACCEPT, _ACCEPT]


def test_a_statement_with_a_python_side_default_is_not_prepared(tmp_path: Path) -> None:
    table = sa.Table(
        "t", sa.MetaData(), sa.Column("a", sa.Integer), sa.Column("b", sa.Integer, default=7)
    )
    engine = sa.create_engine(f"sqlite:///{tmp_path / 't.sqlite'}")
    table.create(engine)
    with engine.begin() as c, pytest.raises(AssertionError):
        run_prepared(c, table.insert(), {"a": 1})
    engine.dispose()


_EVENT = {"session_id": "ses_a", "workflow_id": "ses_a:turn-1", "payload": "{}"}
_EVENTS = [
    {**_EVENT, "idx": 0, "body_seq": 0, "step_key": None, "attempt": None},
    {**_EVENT, "idx": 1, "body_seq": None, "step_key": "model:0", "attempt": 0},
]
#: the reads a turn makes (and the claim's ``RETURNING``), after ``WRITES``
READS: list[tuple[Any, dict[str, Any]]] = [
    (_HEAD, {"b_session": "ses_a"}),
    (_CLAIM_TURN, {"b_session": "ses_a"}),
    (_PROGRESS, {"b_workflow": "ses_a:turn-1"}),
    (_BODY_EVENT, {"b_workflow": "ses_a:turn-1", "b_seq": 0}),
    (_NEXT_EVENT, {"b_session": "ses_a"}),
    (_CURRENT_CHECKPOINT, {"b_session": "ses_a"}),
    (_RECORDS, {"b_workflow": "ses_a:turn-1"}),
    (_BODY_START, {"b_session": "ses_a"}),  # a Boolean column: left to ``execute``
]


def _read(store: SessionStore, run: Any) -> list[tuple[list[tuple[str, Any]], list[Any]]]:
    """Each read's SQL and parameters as SQLite got them, and its rows with their names."""
    sent: list[tuple[str, Any]] = []
    reading: list[Connection] = []

    def seen(c: Connection, _cursor: Any, sql: str, params: Any, *_: Any) -> None:
        if c in reading:  # as in ``_sent``
            sent.append((sql, tuple(params)))

    sa.event.listen(store.engine, "before_cursor_execute", seen)
    try:
        with store.engine.begin() as c:
            reading.append(c)
            for statement, values in WRITES:
                run_prepared(c, statement, values)
            # the next turn accepted, and the last one's events: rows for every read
            run_prepared(c, _ACCEPT, {**_PLACE, "turn": 2, "workflow_id": "ses_a:turn-2"})
            c.execute(events.insert(), _EVENTS)
            found = []
            for statement, values in READS:
                sent.clear()
                rows = [(tuple(row), dict(row._mapping)) for row in run(c, statement, values)]
                found.append((list(sent), rows))
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", seen)
    return found


def test_the_turns_reads_send_what_execute_sent_and_read_the_same_rows(
    stores: tuple[SessionStore, SessionStore],
) -> None:
    by_execute = _alike(stores, _read)
    # each read found rows to compare (the progress, a group by step and attempt: two)
    assert [len(rows) for _, rows in by_execute] == [1, 1, 2, 1, 1, 1, 1, 1]


def test_a_read_that_returns_a_processed_type_is_left_to_execute(
    stores: tuple[SessionStore, SessionStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, store = stores
    assert not plain_rows(_BODY_START, store.engine.dialect)
    assert plain_rows(_PROGRESS, store.engine.dialect)
    driver_sql: list[str] = []
    exec_driver_sql = Connection.exec_driver_sql

    def counting(self: Connection, sql: str, *args: Any, **kwargs: Any) -> Any:
        driver_sql.append(sql)
        return exec_driver_sql(self, sql, *args, **kwargs)

    monkeypatch.setattr(Connection, "exec_driver_sql", counting)
    with store.engine.connect() as c:
        legacy = run_prepared(c, _BODY_START, {"b_session": "ses_a"}).one()[-1]
        run_prepared(c, _PROGRESS, {"b_workflow": "ses_a:turn-1"}).all()
    # the Boolean comes back a bool, as ``execute`` gives it, not SQLite's 0
    assert legacy is False
    assert len(driver_sql) == 1
