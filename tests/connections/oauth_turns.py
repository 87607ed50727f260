"""A turn that lends a session store and a person to the connection pool, and the grants it
leaves, for the OAuth tests that call through the pool."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import sqlalchemy as sa

from eve.auth.principal import Principal
from eve.connections import authorization
from eve.connections.pool import ConnectionPool
from eve.context import EveContext, use_context
from eve.sessions.store import SessionStore
from eve.sessions.tables import mcp_oauth
from tests.connections.oauth_person import Person


@contextlib.asynccontextmanager
async def turn(
    store: SessionStore, person: Person, principal: str = "alice"
) -> AsyncIterator[ConnectionPool]:
    """A new pool (a new worker process, as far as connections go) inside a turn of
    ``principal`` that lends the store and tells ``person``."""
    pool = ConnectionPool()
    who = Principal(id=principal, kind="user")
    with (
        use_context(EveContext(session_id="s", principal=who)),
        authorization.lent(store=lambda: store, notify=person.notify),
    ):
        try:
            yield pool
        finally:
            await pool.close()


def rows(store: SessionStore) -> list[sa.Row[tuple[str, str | None, float | None]]]:
    """The grants kept: principal, token response and absolute expiry."""
    query = sa.select(mcp_oauth.c.principal, mcp_oauth.c.tokens, mcp_oauth.c.expires_at)
    return list(store.run(lambda c: c.execute(query).all()))
