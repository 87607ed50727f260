"""A session's create with its first message on PostgreSQL, on the event loop's thread: one
call of ``eve_create_session_v1`` (``pg_create_sql.py``) on the loop's connections
(``PgLoopClaims.call``), so its ``202`` waits for one round trip, as a message's does.

In a request's thread the same create was a key lookup, the row's transaction, then the open
(``session.started``, its hooks, the initial state, the first turn's claim and the open's
record), each a thread's turn at the interpreter's lock behind a loaded worker's hundred
threads. Here the answer stands for the row (``opening``, the creator holding its open
claim), the first turn accepted in place 0 (``accepted.OPENING``: nothing starts it yet)
and the key's answer; the caller then opens the session after the answer, and starts the
turn once the open is recorded (``opening.py``).

``NOT_NOW`` (made in a thread as before, nothing committed): no free connection yet, a call
the server refused (a key sent twice at once: the thread's create replays it), or a key
whose purge of expired keys is due (the thread's create purges, ``idempotency.record``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, assert_never

from eve.auth.principal import PrincipalRef
from eve.sessions.claim_now import NOT_NOW, NotNow
from eve.sessions.idempotency import IdempotencyKey, purge_due
from eve.sessions.opening import LEASE_SECONDS
from eve.sessions.pg_claim_batches import Rows
from eve.sessions.pg_claim_now import KeyAnswered, PgLoopClaims, encoded, key_params
from eve.sessions.pg_create_sql import CALL, CALL_PARAMS


@dataclass(frozen=True, kw_only=True)
class SessionCreate:
    """What a create with a first message writes, as the function takes it."""

    session_id: str
    owner: PrincipalRef
    #: the creator's open claim (``opening.new_owner``)
    open_owner: str
    #: the first turn's input as stored (``accepted.accept``) and its workflow's id
    input: Any
    workflow_id: str
    key: IdempotencyKey | None
    #: the answer to record for the key (JSON)
    answer: str
    now: float = field(default_factory=time.time)

    def params(self) -> list[bytes | None]:
        key = self.key
        values = {
            "session_id": self.session_id,
            "owner_kind": self.owner.kind,
            "owner_id": self.owner.id,
            "open_owner": self.open_owner,
            "open_until": repr(self.now + LEASE_SECONDS),
            "input": json.dumps(self.input),
            "workflow_id": self.workflow_id,
            "now": repr(self.now),
            **key_params(key),
            "answer": self.answer,
        }
        return encoded(values, CALL_PARAMS)


@dataclass(frozen=True, kw_only=True)
class Created:
    """The row, the first place and the key are committed."""


CreateOutcome = Created | KeyAnswered


async def create_session(claims: PgLoopClaims, create: SessionCreate) -> Created | NotNow:
    """Make ``create``'s session in one round trip on the loop: ``Created``, or ``NOT_NOW``
    (nothing committed: make it in a thread); ``Replayed`` raised when its key was answered
    (``IdempotencyKeyReused`` for another request's key)."""
    if create.key is not None and purge_due(create.now):
        return claims.left("purge")
    rows = await claims.call(CALL, create.params())
    if isinstance(rows, NotNow):
        return NOT_NOW
    found = _outcome(rows)
    match found:
        case Created():
            return found
        case KeyAnswered():
            raise found.replayed(create.key)
        case _:
            assert_never(found)


def _outcome(rows: Rows) -> CreateOutcome:
    [[outcome, fingerprint, answer]] = rows
    if outcome == "created":
        return Created()
    assert outcome == "answered" and fingerprint is not None and answer is not None
    return KeyAnswered(fingerprint=fingerprint, answer=answer)
