"""Idempotency keys: a POST repeated with the same ``Idempotency-Key`` gets the first answer.

A client that lost the answer to ``POST /session`` or ``POST /session/{id}`` (the connection
dropped, the server was killed) sends the request again with the same key; the server
answers what it answered the first time and does nothing twice. The first answer is written
in the transaction that does the work (the session row, the turn claim), so either both are
stored or neither. Keys are scoped by route, session and principal: the same key on another
session, or from another principal, is another key. A key lives ``TTL_SECONDS`` (24 hours)
from its first use; after that it is forgotten and a repeat is a new request.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass

import msgspec
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from eve.auth.principal import OPERATOR, Principal
from eve.errors import IdempotencyKeyInvalid, IdempotencyKeyReused
from eve.sessions.tables import idempotency_keys

#: the request header that carries the key
HEADER = "Idempotency-Key"
#: how long a key's first answer is kept, in seconds
TTL_SECONDS = 24 * 3600.0
MAX_KEY_CHARS = 255
#: expired keys are deleted at most this often per process (when a key is recorded)
PURGE_EVERY_SECONDS = 600.0

#: an answer as stored: the fields of the 202 body
Answer = dict[str, str | None]

_last_purge = 0.0


@dataclass(frozen=True, kw_only=True)
class IdempotencyKey:
    """One request's key: where it applies, and what the request asked."""

    scope: str
    key: str
    fingerprint: str


class Replayed(Exception):
    """Raised inside a transaction that found the key answered: rolls the work back."""

    def __init__(self, answer: Answer) -> None:
        super().__init__("replayed")
        self.answer = answer


def parse_key(raw: str | None) -> str | None:
    """The header's value, checked: printable ASCII, 1 to ``MAX_KEY_CHARS`` characters."""
    if raw is None:
        return None
    if not raw or len(raw) > MAX_KEY_CHARS or not (raw.isascii() and raw.isprintable()):
        raise IdempotencyKeyInvalid(
            f"{HEADER} must be 1 to {MAX_KEY_CHARS} printable ASCII characters (a UUID is fine)",
            limit=MAX_KEY_CHARS,
        )
    return raw


def key_for(
    route: str, key: str | None, request: object, *, principal: Principal = OPERATOR
) -> IdempotencyKey | None:
    if key is None:
        return None
    fingerprint = hashlib.sha256(msgspec.json.encode(request)).hexdigest()
    return IdempotencyKey(scope=scope_of(route, principal), key=key, fingerprint=fingerprint)


def scope_of(route: str, principal: Principal) -> str:
    """Where a key applies: ``route`` as ``principal`` calls it. The shared token's
    operator's scope is the route alone, as before principals, so its keys from an older
    eve still replay; another principal's ends with a digest of its kind and id."""
    if principal.is_same(OPERATOR):
        return route
    who = hashlib.sha256(f"{principal.kind}\0{principal.id}".encode()).hexdigest()[:24]
    return f"{route} by {who}"


def lookup(c: Connection, key: IdempotencyKey) -> Answer | None:
    """The first answer given to ``key``, if it is still kept; refuses another request."""
    row = c.execute(
        sa.select(idempotency_keys.c.fingerprint, idempotency_keys.c.answer).where(
            idempotency_keys.c.scope == key.scope,
            idempotency_keys.c.key == key.key,
            idempotency_keys.c.created_at >= time.time() - TTL_SECONDS,
        )
    ).first()
    if row is None:
        return None
    return kept_answer(key, fingerprint=row[0], answer=row[1])


def kept_answer(key: IdempotencyKey, *, fingerprint: str, answer: str) -> Answer:
    """The answer kept for ``key`` (stored as ``answer``, JSON) if ``fingerprint``, its
    request's, is ``key``'s; ``IdempotencyKeyReused`` if it is another request's."""
    if fingerprint != key.fingerprint:
        raise IdempotencyKeyReused(
            f"the {HEADER} {key.key!r} was already used for another request here; "
            "use a new key for a new request",
            key=key.key,
        )
    kept: Answer = json.loads(answer)
    return kept


def replay_if_answered(c: Connection, key: IdempotencyKey | None) -> None:
    """Raise ``Replayed`` when ``key`` was answered already (inside the work's transaction)."""
    if key is not None and (answer := lookup(c, key)) is not None:
        raise Replayed(answer)


def record(c: Connection, key: IdempotencyKey | None, answer: Answer) -> None:
    """Keep ``answer`` for ``key``, in the transaction of the work it answers."""
    global _last_purge
    if key is None:
        return
    now = time.time()
    expired = idempotency_keys.c.created_at < now - TTL_SECONDS
    if purge_due(now):
        _last_purge = now
        c.execute(idempotency_keys.delete().where(expired))
    else:  # this key's own expired row, which would collide
        mine = (idempotency_keys.c.scope == key.scope) & (idempotency_keys.c.key == key.key)
        c.execute(idempotency_keys.delete().where(mine & expired))
    c.execute(
        idempotency_keys.insert().values(
            scope=key.scope,
            key=key.key,
            fingerprint=key.fingerprint,
            answer=json.dumps(answer),
            created_at=now,
        )
    )


def purge_due(now: float) -> bool:
    """Whether the next key recorded deletes every expired key (``record``)."""
    return now - _last_purge > PURGE_EVERY_SECONDS


#: the route a session is created on, as its keys are scoped (``SessionService.create``)
CREATE_ROUTE = "POST /session"


def opened_under(c: Connection, principal: Principal, prefix: str) -> dict[str, str]:
    """The sessions ``principal`` created with an Idempotency-Key starting with ``prefix``
    and still kept: each key's session id. A channel that names its conversations by key
    (a Slack thread) finds them again here after a restart."""
    keys = idempotency_keys.c
    rows = c.execute(
        sa.select(keys.key, keys.answer).where(
            keys.scope == scope_of(CREATE_ROUTE, principal),
            keys.key.startswith(prefix, autoescape=True),
            keys.created_at >= time.time() - TTL_SECONDS,
        )
    ).all()
    return {key: json.loads(answer)["sessionId"] for key, answer in rows}
