"""Forking a session: a new session that starts where another one stands between its turns.

A fork copies what the source's next turn would start from: its current checkpoint (the
history, the ``define_state`` slots, the ``once()`` approvals, the token totals and raised
limits) and, for a sandboxed agent, its workspace's head (``workspaces.copy_head``: the
files follow when the fork's first turn opens its workspace). The fork is a session of its
own, owned by whoever forked it, with its own id, queue and event log; its log starts with
a ``session.started`` that names the source (``forked_from``), and its row keeps the name
(``GET /session/{id}``'s ``forkedFrom``). Nothing of the source changes. All of it is one
transaction of the session store, with the ``Idempotency-Key``'s answer: a fork exists
whole or not at all, and ``eve sessions fork`` makes one with no server running.

Why only between turns: a turn saves the checkpoint at its end, while its workspace moves
at every step, so a copy taken mid-turn would pair the last finished turn's history with
files of the running one. A source with a turn running, parked on a person or queued, or
a reset or compaction queued, is refused with ``SessionBusy``. A turn (or reset) whose
last event is in the log counts as finished even before its place in the queue is marked
done, so a client that saw ``session.waiting`` may fork at once. The transaction holds
the source row's lock, the one a claim of its next turn takes, so no turn is queued
between the check and the copy.

No ``session.started`` hooks run for a fork: they ran when the source started, and the
state they set is among what is copied. The token totals carry over too, so a fork counts
its source's usage against the session limits: forking does not reset a limit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

import msgspec
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from eve._redact import redact
from eve.auth.principal import OPERATOR, Principal
from eve.errors import SessionBusy
from eve.events import EventMeta, SessionStarted, SessionStartedData
from eve.execution.events import new_event_id
from eve.sessions.accepted import original_id
from eve.sessions.access import seen_by
from eve.sessions.idempotency import (
    IdempotencyKey,
    Replayed,
    key_for,
    record,
    replay_if_answered,
)
from eve.sessions.opening import OpenStage
from eve.sessions.store import (
    BODY_ENDS,
    SessionStore,
    current_checkpoint,
    insert_session,
    read_session,
)
from eve.sessions.tables import accepted_places, checkpoints, events, sessions
from eve.sessions.workspaces import copy_head

#: how a queue place's kind is named in ``SessionBusy.place`` (a turn by its id)
_PLACE_NAMES = {"reset": "reset", "compact": "compaction"}


@dataclass(frozen=True, kw_only=True)
class Forked:
    """The session a fork made, and the one it was made from."""

    session_id: str
    forked_from: str
    #: a repeat of an earlier fork with the same ``Idempotency-Key``: nothing was done
    replayed: bool = False


def fork_route(source: str) -> str:
    """The route a fork's ``Idempotency-Key`` is scoped to."""
    return f"POST /session/{source}/fork"


def fork_session(
    store: SessionStore,
    source: str,
    *,
    fork_id: str,
    principal: Principal = OPERATOR,
    key: str | None = None,
) -> Forked:
    """Fork ``source`` as the new session ``fork_id``, owned by ``principal``, which must be
    allowed to see the source (else ``SessionNotFound``, as for an unknown id); ``key`` is
    the request's ``Idempotency-Key``. Raises ``SessionBusy`` while the source has a turn,
    reset or compaction under way."""
    # a fork's request has no body: the key alone says which request it is
    idem = key_for(fork_route(source), key, "fork", principal=principal)
    try:
        return store.run(lambda c: _fork(c, source, fork_id, principal, idem))
    except Replayed as replayed:
        return Forked(
            session_id=str(replayed.answer["sessionId"]), forked_from=source, replayed=True
        )


def _fork(
    c: Connection, source: str, fork_id: str, principal: Principal, idem: IdempotencyKey | None
) -> Forked:
    # a write that changes nothing takes the row's lock (PostgreSQL) or the database's
    # (SQLite), the one a claim of the source's next turn takes: none comes in meanwhile
    c.execute(
        sessions.update().where(sessions.c.id == source).values(next_turn=sessions.c.next_turn)
    )
    replay_if_answered(c, idem)
    seen_by(read_session(c, source), source, principal)
    _refuse_if_busy(c, source)
    data = c.execute(sa.select(current_checkpoint()).where(sessions.c.id == source)).scalar()
    insert_session(
        c,
        fork_id,
        owner=principal,
        checkpoint_version=None if data is None else 1,
        # nothing is left to open: no hooks run, and session.started is written here
        open_stage=OpenStage.OPEN.value,
        forked_from=source,
    )
    if data is not None:
        # the checkpoint as the source stored it: redacted already
        c.execute(checkpoints.insert().values(session_id=fork_id, version=1, data=data))
    copy_head(c, source, fork_id)
    c.execute(events.insert().values(session_id=fork_id, idx=0, payload=_started(fork_id, source)))
    record(c, idem, {"sessionId": fork_id, "status": "forked", "forkedFrom": source})
    return Forked(session_id=fork_id, forked_from=source)


def _refuse_if_busy(c: Connection, session_id: str) -> None:
    """``SessionBusy`` if a place of the session's queue may still change what a fork copies."""
    places = c.execute(
        sa.select(accepted_places.c.turn, accepted_places.c.kind, accepted_places.c.workflow_id)
        .where(accepted_places.c.session_id == session_id, accepted_places.c.state != "done")
        .order_by(accepted_places.c.turn)
    ).all()
    for turn, kind, workflow_id in places:
        # a compaction logs session.compacted before it saves its checkpoint: only its
        # place, marked done, says it finished
        if kind != "compact" and _ended(c, session_id, original_id(workflow_id)):
            continue
        place = _PLACE_NAMES.get(kind, f"turn_{turn}")
        raise SessionBusy(
            f"session {session_id} has {place} running, waiting on a person or queued, and a "
            "fork copies a session between its turns: wait for its session.waiting (answer "
            "or cancel a parked turn), then fork again",
            session_id=session_id,
            place=place,
        )


def _ended(c: Connection, session_id: str, log_id: str) -> bool:
    """The workflow's body logged its last event: its checkpoint and workspace are final."""
    last = c.execute(
        sa.select(events.c.payload)
        .where(
            events.c.session_id == session_id,
            events.c.workflow_id == log_id,
            events.c.body_seq.is_not(None),
        )
        .order_by(events.c.body_seq.desc())
        .limit(1)
    ).scalar()
    return last is not None and json.loads(last).get("type") in BODY_ENDS


def _started(fork_id: str, source: str) -> str:
    """The fork's ``session.started``, as the event log stores it (index 0)."""
    meta = EventMeta(id=new_event_id(), at=datetime.now(UTC).isoformat(), index=0)
    data = SessionStartedData(session_id=fork_id, forked_from=source)
    return redact(msgspec.json.encode(SessionStarted(data=data, meta=meta)).decode())
