"""MCP connections' OAuth grants in the session database: one row per connection and principal.

The SDK's token storage (``eve.connections.oauth_client``) reads and writes through this; the
values are JSON strings it validates itself, so this module knows tables, not OAuth.
A grant is keyed by the connection's file and its server's URL together: pointing a
connection at another server starts a new grant instead of presenting the old one's tokens.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from eve.sessions.store import SessionStore
from eve.sessions.tables import mcp_oauth


@dataclass(frozen=True, kw_only=True)
class StoredGrant:
    """What one principal holds for one connection."""

    tokens: str | None
    expires_at: float | None
    client_info: str | None


def grant_key(logical_path: str, url: str) -> str:
    return hashlib.sha256(f"{logical_path}\n{url}".encode()).hexdigest()


@dataclass(frozen=True, kw_only=True)
class GrantRows:
    """One principal's grant for one connection, in ``store``."""

    store: SessionStore
    key: str
    principal: str
    connection: str

    def load(self) -> StoredGrant | None:
        def read(c: Connection) -> StoredGrant | None:
            row = c.execute(
                sa.select(mcp_oauth.c.tokens, mcp_oauth.c.expires_at, mcp_oauth.c.client_info)
                .where(mcp_oauth.c.grant_key == self.key)
                .where(mcp_oauth.c.principal == self.principal)
            ).first()
            if row is None:
                return None
            return StoredGrant(
                tokens=row.tokens, expires_at=row.expires_at, client_info=row.client_info
            )

        return self.store.run(read)

    def save_tokens(self, tokens: str, expires_at: float | None) -> None:
        self._save({"tokens": tokens, "expires_at": expires_at})

    def save_client(self, client_info: str) -> None:
        self._save({"client_info": client_info})

    def _save(self, values: dict[str, object]) -> None:
        values = {**values, "updated_at": time.time(), "connection": self.connection}

        def write(c: Connection) -> None:
            where = (mcp_oauth.c.grant_key == self.key) & (mcp_oauth.c.principal == self.principal)
            if c.execute(sa.update(mcp_oauth).where(where).values(**values)).rowcount:
                return
            try:
                with c.begin_nested():
                    c.execute(
                        sa.insert(mcp_oauth).values(
                            grant_key=self.key, principal=self.principal, **values
                        )
                    )
            except sa.exc.IntegrityError:
                # another worker inserted the row between our update and insert
                c.execute(sa.update(mcp_oauth).where(where).values(**values))

        self.store.run(write)
