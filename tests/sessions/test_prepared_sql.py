"""The turn's writes compiled once on SQLite send SQLite what ``Connection.execute`` sent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from eve.sessions.accepted import _ACCEPT, _FINISH, _STARTED
from eve.sessions.prepared_sql import run_prepared
from eve.sessions.step_records import _NEW_RECORD
from eve.sessions.store import (
    _CURRENT_VERSION,
    _NEW_CHECKPOINT,
    _RECYCLE_CHECKPOINT,
    SessionStore,
)

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


def test_the_turns_writes_send_what_execute_sent_and_write_the_same_rows(
    stores: tuple[SessionStore, SessionStore],
) -> None:
    executed, prepared = stores

    def execute(c: Connection, statement: Any, values: dict[str, Any]) -> Any:
        return c.execute(statement, values)

    by_execute = _sent(executed, execute)
    assert _sent(prepared, run_prepared) == by_execute
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
