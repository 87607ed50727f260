"""What SQLite's planner, which has no statistics, does with the store's lookups that would
otherwise scan: each goes by the index made for it, on a new database and on one an older
eve made without that index."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.sql import Executable

from eve.sessions.accepted import _STARTED
from eve.sessions.schema_record import schema_versions
from eve.sessions.store import _CANCEL_REQUESTED, SessionStore
from eve.sessions.tables import sessions


def plan(store: SessionStore, statement: Executable, *parameters: str) -> str:
    """How SQLite runs ``statement`` (its literal values bound, else ``parameters``)."""
    sql = statement.compile(
        dialect=store.engine.dialect, compile_kwargs={"literal_binds": not parameters}
    )
    with store.engine.connect() as c:
        found = c.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", parameters)
        return " ".join(row[-1] for row in found)


def test_the_turns_asked_to_cancel_are_found_by_their_index_not_by_a_scan(
    tmp_path: Path,
) -> None:
    store = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    for n in range(3):
        store.create_session(f"ses_{n}")
    store.request_cancel("ses_1", "ses_1:turn-0")
    asked = _CANCEL_REQUESTED.params(b_ids=["ses_1:turn-0", "ses_2:turn-0"])
    assert "USING COVERING INDEX eve_sessions_cancel" in plan(store, asked)
    store.close()


def test_the_cancel_index_holds_only_the_sessions_asked_to_cancel(
    either_store: SessionStore,
) -> None:
    for n in range(3):
        either_store.create_session(f"ses_{n}")
    either_store.request_cancel("ses_1", "ses_1:turn-0")
    assert either_store.cancel_requested(["ses_1:turn-0", "ses_2:turn-0"]) == {"ses_1:turn-0"}
    [index] = [
        index
        for index in sa.inspect(either_store.engine).get_indexes(sessions.name)
        if index["name"] == "eve_sessions_cancel"
    ]
    assert index["column_names"] == ["cancel_workflow_id"]


def test_a_database_an_older_eve_made_gets_the_cancel_index_when_opened(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'eve.sqlite'}"
    SessionStore(url).close()
    engine = sa.create_engine(url)
    with engine.begin() as c:
        c.exec_driver_sql("DROP INDEX eve_sessions_cancel")
        c.exec_driver_sql(f"DROP TABLE {schema_versions.name}")  # it kept no record
    engine.dispose()
    store = SessionStore(url)
    indexes = {index["name"] for index in sa.inspect(store.engine).get_indexes(sessions.name)}
    assert "eve_sessions_cancel" in indexes
    store.close()


def test_a_body_finds_its_place_by_its_workflow_not_among_every_place_accepted(
    tmp_path: Path,
) -> None:
    store = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    # (an UPDATE's values cannot be bound as literals)
    started = plan(store, _STARTED, "enqueued", "ses_x:turn-0", "accepted")
    assert "USING INDEX eve_accepted_workflow" in started
    store.close()
