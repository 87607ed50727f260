"""A database an eve from before principals made: its sessions, requests and queued turns
belong to the operator once a new eve opens it (SQLite, and PostgreSQL)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from eve.auth.principal import OPERATOR, OPERATOR_REF, PrincipalRef
from eve.sessions.access import may_answer, may_see, owned_by
from eve.sessions.listing import list_sessions
from eve.sessions.schema_record import schema_versions
from eve.sessions.store import SessionStore
from eve.sessions.turn_workflow import sender_of
from tests.sessions.principals import ALICE

#: what eve_sessions and eve_input_requests lacked before principals
NEW_COLUMNS = {
    "eve_sessions": ("owner_id", "owner_kind"),
    "eve_input_requests": ("asker_id", "asker_kind", "answer_by"),
}


def as_an_older_eve_left_it(url: str) -> None:
    """The tables without the owner columns and their index, holding one session with a
    pending approval."""
    store = SessionStore(url)
    with store.engine.begin() as c:
        c.execute(sa.text("DROP INDEX eve_sessions_owner"))
        c.execute(sa.text(f"DROP TABLE {schema_versions.name}"))  # it kept no record
        for table, columns in NEW_COLUMNS.items():
            for column in columns:
                c.execute(sa.text(f"ALTER TABLE {table} DROP COLUMN {column}"))
        c.execute(
            sa.text(
                "INSERT INTO eve_sessions (id, created_at, status, next_turn) "
                "VALUES ('ses_old', 1.0, 'active', 1)"
            )
        )
        c.execute(
            sa.text(
                "INSERT INTO eve_input_requests (request_id, session_id, workflow_id, status) "
                "VALUES ('inp_old', 'ses_old', 'ses_old:turn-0', 'pending')"
            )
        )
    store.close()


def upgrade_and_check(url: str) -> None:
    as_an_older_eve_left_it(url)
    store = SessionStore(url)  # the new eve opens it: the columns and the index come back
    try:
        indexes = {i["name"] for i in sa.inspect(store.engine).get_indexes("eve_sessions")}
        assert "eve_sessions_owner" in indexes
        old = store.get_session("ses_old")
        assert old is not None and old.owner == OPERATOR_REF
        assert may_see(old.owner, OPERATOR) and not may_see(old.owner, ALICE)
        pending = store.pending_request("ses_old", "inp_old")
        assert pending is not None and (pending.asker, pending.answer_by) == (OPERATOR_REF, None)
        assert may_answer(pending, OPERATOR) and not may_answer(pending, ALICE)
        store.create_session("ses_alice", owner=ALICE)

        def listed(where: sa.ColumnElement[bool] | None) -> list[tuple[str, PrincipalRef | None]]:
            page = store.run(lambda c: list_sessions(c, limit=10, cursor=None, where=where))
            return [(entry.session_id, entry.owner) for entry in page.sessions]

        alice = PrincipalRef(id=ALICE.id, kind="user")
        assert listed(owned_by(ALICE)) == [("ses_alice", alice)]
        assert listed(owned_by(OPERATOR)) == [("ses_alice", alice), ("ses_old", OPERATOR_REF)]
    finally:
        store.close()
    # a turn queued by the older eve (its input the message's parts alone) is the operator's
    assert sender_of([{"type": "text", "text": "hi"}]) == OPERATOR


def test_an_older_sqlite_database_upgrades_and_its_sessions_are_the_operators(
    tmp_path: Path,
) -> None:
    upgrade_and_check(f"sqlite:///{tmp_path / 'eve.sqlite'}")


def test_an_older_postgresql_database_upgrades_and_its_sessions_are_the_operators(
    postgres_url: str,
) -> None:
    upgrade_and_check("postgresql+psycopg://" + postgres_url.split("://", 1)[1])
