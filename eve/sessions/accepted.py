"""Accepted places in a session's queue: the durable fact a 202 stands for (an outbox),
and the order in which they start.

A message's turn (or a reset, a compaction) is accepted when its row here commits, in the
transaction that claims its number and records its ``Idempotency-Key``. eve, not DBOS's
queue, decides when it starts: a place starts once every earlier place of its session is
``done``, so a session runs one place at a time, in turn order. Whoever finds a place
startable marks it ``enqueued`` (the stored name of "handed to DBOS") in the transaction
that looks, with the session's row locked, so exactly one of them starts it:

- the request that accepts it, when nothing of its session is unfinished (``accept``);
- the body of the place before it, when it ends (``finish_and_next``): the next place
  starts once that body's workflow has ended;
- the sweep (``accepted_sweep.py``), for what neither did (a crash between).

Starting it is then ``DBOS.start_workflow_async`` under the place's fixed workflow id, a
separate write (eve's tables and DBOS's are two databases on SQLite, and DBOS writes through
its own engine), which can fail or be repeated: DBOS takes an id it has as the same
workflow and runs it once, and a place marked ``enqueued`` that DBOS does not know is
started again by the sweep (its ``accepted_at`` is the time it was marked, so the starter
has ``GRACE_SECONDS`` first). No transaction of eve's is held open across DBOS's write: on
SQLite that would make every write to eve's file wait for DBOS's lock on the other file.
Turns a worker adopts from a dead one, and those an older eve put on DBOS's turn queue,
run off that queue; their successors wait for them here all the same.

A row's life: ``accepted`` → ``enqueued`` → ``done``. A body marks its row done once its
outcome is in the log; the sweep settles the rows whose workflow ended without doing so. A
session's first turn made with its row on PostgreSQL (``pg_create_sql.py``) starts as
``opening`` (``OPENING``), a state nothing starts and every later place waits behind, until
the session's open is recorded (``opening.py``), which makes it ``accepted``
(``release_opening``): the turn never runs before ``session.started``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from eve.sessions.prepared_sql import run_prepared
from eve.sessions.tables import accepted_places, sessions

if TYPE_CHECKING:
    from eve.sessions.store import CheckpointSave

#: what holds a place in a session's queue
Kind = Literal["turn", "reset", "compact"]
#: a rerun's workflow id is its turn's with this and a number after it
RERUN_MARK = ".rerun-"
#: the state of a first turn accepted before its session's open is recorded
OPENING = "opening"


@dataclass(frozen=True, kw_only=True)
class Place:
    """One accepted place: what runs there and which workflow runs it now."""

    session_id: str
    turn: int
    kind: Kind
    #: a turn's input (``turn_workflow.TurnInput``); None for a reset or compaction
    input: Any
    state: str
    workflow_id: str
    reruns: int
    accepted_at: float

    @property
    def log_id(self) -> str:
        """The workflow id its events carry in the log, the same for every rerun."""
        return original_id(self.workflow_id)


def original_id(workflow_id: str) -> str:
    """The workflow id a rerun (``<id>.rerun-<n>``) stands in for; an id itself otherwise."""
    return workflow_id.split(RERUN_MARK, 1)[0]


def rerun_id(place: Place) -> str:
    return f"{place.log_id}{RERUN_MARK}{place.reruns + 1}"


# built once: what a turn runs (``store.py`` says why)
_PLACE = sa.and_(
    accepted_places.c.session_id == sa.bindparam("b_session"),
    accepted_places.c.turn == sa.bindparam("b_turn"),
)
_UNFINISHED = sa.and_(
    accepted_places.c.session_id == sa.bindparam("b_session"),
    accepted_places.c.state != "done",
)
_UNFINISHED_BEFORE = (
    sa.select(accepted_places.c.turn)
    .where(_UNFINISHED, accepted_places.c.turn < sa.bindparam("b_turn"))
    .limit(1)
)
_HEAD = sa.select(accepted_places).where(_UNFINISHED).order_by(accepted_places.c.turn).limit(1)
_LOCK_SESSION = (
    sa.select(sessions.c.id).where(sessions.c.id == sa.bindparam("b_session")).with_for_update()
)
# a body quick enough to have finished already stays done
_ENQUEUED = (
    accepted_places.update()
    .where(_PLACE, accepted_places.c.state == "accepted")
    .values(state="enqueued")
)
#: a claimed place's row (``accept``)
_ACCEPT = accepted_places.insert()
# a body marks its own place: it runs, so DBOS has it (whoever started it need not write).
# Found by its workflow's index: ``state || ''`` keeps SQLite's planner, which has no
# statistics, off the state's index, where it went through every place still accepted
# (a backlog's thousands, for each body that starts)
_STARTED = (
    accepted_places.update()
    .where(
        accepted_places.c.workflow_id == sa.bindparam("b_workflow"),
        accepted_places.c.state.concat(sa.literal_column("''")) == "accepted",
    )
    .values(state="enqueued")
)
_FINISH = (
    accepted_places.update()
    .where(
        accepted_places.c.workflow_id == sa.bindparam("b_workflow"),
        accepted_places.c.state != "done",
    )
    .values(state="done", input=None)
)

# PostgreSQL only: ``_FINISH`` as a data-modifying WITH clause of ``_LOCK_SESSION`` (run to
# its end whether or not the statement reads it)
_FINISH_LOCKING = _LOCK_SESSION.add_cte(_FINISH.cte("finished"))


def accept(
    c: Connection,
    *,
    session_id: str,
    turn: int,
    kind: Kind,
    workflow_id: str,
    turn_input: Any = None,
) -> Place | None:
    """Record the claimed place ``turn`` (inside the claim's transaction, which holds the
    session's row); the place, if nothing of its session is unfinished before it: the
    caller starts it then (``DurableEngine.start``)."""
    stored = None if turn_input is None else json.dumps(turn_input)
    accepted_at = time.time()
    run_prepared(
        c,
        _ACCEPT,
        {
            "session_id": session_id,
            "turn": turn,
            "kind": kind,
            "input": stored,
            "state": "accepted",
            "workflow_id": workflow_id,
            "reruns": 0,
            "accepted_at": accepted_at,
        },
    )
    if c.execute(_UNFINISHED_BEFORE, {"b_session": session_id, "b_turn": turn}).first():
        return None  # the place before it starts it when it ends (``finish_and_next``)
    return new_place(
        session_id=session_id,
        turn=turn,
        kind=kind,
        workflow_id=workflow_id,
        turn_input=turn_input,
        accepted_at=accepted_at,
    )


def new_place(
    *, session_id: str, turn: int, kind: Kind, workflow_id: str, turn_input: Any, accepted_at: float
) -> Place:
    """A place as its claim accepted it (``accept``; ``pg_claim_now.py`` on PostgreSQL)."""
    return Place(
        session_id=session_id,
        turn=turn,
        kind=kind,
        input=turn_input,
        state="accepted",
        workflow_id=workflow_id,
        reruns=0,
        accepted_at=accepted_at,
    )


def place_of(row: Any) -> Place:
    """The place a row of ``eve_accepted`` (or one with its columns' names) holds."""
    raw = row.input
    return Place(
        session_id=row.session_id,
        turn=int(row.turn),
        kind=row.kind,
        input=None if raw is None else json.loads(raw),
        state=row.state,
        workflow_id=row.workflow_id,
        reruns=int(row.reruns),
        accepted_at=float(row.accepted_at),
    )


def deliverable(c: Connection, session_id: str) -> Place | None:
    """The session's first unfinished place if it is not started yet: the one to start
    now. On PostgreSQL the session's row is locked first, as a claim locks it, so a body
    that ends and a message accepted at once cannot both miss the other's write."""
    if c.dialect.name == "postgresql":
        c.execute(_LOCK_SESSION, {"b_session": session_id})
    return _head(c, session_id)


def _head(c: Connection, session_id: str) -> Place | None:
    """``deliverable`` once the session's row is locked (on PostgreSQL: the read's snapshot
    is taken after the lock, so it sees a claim that held the row before)."""
    row = run_prepared(c, _HEAD, {"b_session": session_id}).first()
    if row is None or row.state != "accepted":
        return None
    return place_of(row)


def release_opening(c: Connection, session_id: str) -> Place | None:
    """The session's first place, ``OPENING`` until now, made ``accepted`` as the session's
    open is recorded (in that transaction): the place to start now; None if there is none
    (a session made in a thread, or without a message, or released already)."""
    row = c.execute(
        accepted_places.update()
        .where(accepted_places.c.session_id == session_id, accepted_places.c.state == OPENING)
        # the sweep leaves it to its starter for ``GRACE_SECONDS`` from now
        .values(state="accepted", accepted_at=time.time())
        .returning(*accepted_places.c)
    ).first()
    return None if row is None else place_of(row)


def mark_enqueued(c: Connection, places: list[Place]) -> None:
    """``places`` are DBOS's now (those not done meanwhile)."""
    c.execute(_ENQUEUED, [{"b_session": p.session_id, "b_turn": p.turn} for p in places])


def mark_started(c: Connection, workflow_id: str) -> None:
    """The place ``workflow_id`` runs is DBOS's: its body is running (``mark_enqueued`` for
    a place whose body the starter cannot count on: ``DurableEngine.start_place``)."""
    run_prepared(c, _STARTED, {"b_workflow": workflow_id})


@dataclass(frozen=True)
class PlaceStarts:
    """``mark_started`` of one place, as data: on PostgreSQL the store sends it with the
    body's first reads as one statement (``pg_progress.py``)."""

    workflow_id: str

    def __call__(self, c: Connection) -> None:
        mark_started(c, self.workflow_id)


def finish(c: Connection, workflow_id: str) -> None:
    """The place ``workflow_id`` runs has its outcome in the log: done, its input dropped."""
    run_prepared(c, _FINISH, {"b_workflow": workflow_id})


def finish_and_next(c: Connection, session_id: str, workflow_id: str) -> Place | None:
    """``finish``, and the session's next place if it may start now (``deliverable``): the
    ending body starts it once its workflow has ended."""
    if c.dialect.name == "postgresql":
        # the finish and the session row's lock in one statement, a round trip fewer; the
        # head is read by the next one, whose snapshot is taken with the lock held
        c.execute(_FINISH_LOCKING, {"b_workflow": workflow_id, "b_session": session_id})
        return _head(c, session_id)
    finish(c, workflow_id)  # the write first: on SQLite the transaction holds the lock from here
    return deliverable(c, session_id)


@dataclass(frozen=True, kw_only=True)
class PlaceEnds:
    """A body's end as data: its checkpoint's save if it has one, then ``finish_and_next``
    of its place. A writer runs it with the body's last events (``TurnEvents.ending``); on
    PostgreSQL the store sends all of it as one call (``pg_turn_end.py``)."""

    session_id: str
    workflow_id: str
    save: CheckpointSave | None = None

    def __call__(self, c: Connection) -> Place | None:
        if self.save is not None:
            self.save(c)
        return finish_and_next(c, self.session_id, self.workflow_id)


_UNDELIVERED = (
    sa.select(sa.func.count())
    .select_from(accepted_places)
    .where(accepted_places.c.state.in_(["accepted", OPENING]))
)


def undelivered(c: Connection) -> int:
    """How many accepted places DBOS does not have yet, in every session: those waiting for
    an earlier place of their session, and those whose start is under way (a message's 202
    comes before it: ``SessionService._enqueue``)."""
    return int(c.execute(_UNDELIVERED).scalar() or 0)


#: where a sweep stopped: the ``(accepted_at, session_id, turn)`` of the last place it saw
Cursor = tuple[float, str, int]


def unfinished(
    c: Connection, *, accepted_before: float, after: Cursor | None = None, limit: int = 200
) -> list[Place]:
    """Up to ``limit`` places not done (``OPENING`` ones too), accepted before
    ``accepted_before``, in the order they were accepted from just after ``after`` (so a
    sweep that pages through them reaches them all, however many parked turns come first)."""
    order = (accepted_places.c.accepted_at, accepted_places.c.session_id, accepted_places.c.turn)
    query = sa.select(accepted_places).where(
        accepted_places.c.state.in_(["accepted", "enqueued", OPENING]),
        accepted_places.c.accepted_at < accepted_before,
    )
    if after is not None:
        query = query.where(sa.tuple_(*order) > sa.tuple_(*after))
    rows = c.execute(query.order_by(*order).limit(limit)).all()
    return [place_of(row) for row in rows]


def cursor_of(place: Place) -> Cursor:
    return (place.accepted_at, place.session_id, place.turn)


def later_places(c: Connection, place: Place) -> list[Place]:
    """The session's places after ``place`` that were delivered (enqueued or done)."""
    rows = c.execute(
        sa.select(accepted_places).where(
            accepted_places.c.session_id == place.session_id,
            accepted_places.c.turn > place.turn,
            accepted_places.c.state != "accepted",
        )
    ).all()
    return [place_of(row) for row in rows]


def _claim(c: Connection, place: Place, **values: Any) -> bool:
    """Change ``place`` unless someone (another worker's sweep) changed it since it was read."""
    done = c.execute(
        accepted_places.update()
        .where(
            accepted_places.c.session_id == place.session_id,
            accepted_places.c.turn == place.turn,
            accepted_places.c.state == place.state,
            accepted_places.c.workflow_id == place.workflow_id,
        )
        .values(**values)
    )
    return bool(done.rowcount == 1)


def claim_rerun(c: Connection, place: Place) -> Place | None:
    """Hand ``place`` to a new workflow (``rerun_id``); None if another sweep took it."""
    workflow_id = rerun_id(place)
    if not _claim(c, place, workflow_id=workflow_id, reruns=place.reruns + 1):
        return None
    return replace(place, workflow_id=workflow_id, reruns=place.reruns + 1)


def claim_settled(c: Connection, place: Place) -> bool:
    """Mark ``place`` done for the sweep; False if another sweep took it first."""
    return _claim(c, place, state="done", input=None)


def drop_rowless(c: Connection, session_id: str) -> list[int]:
    """Mark done the places of ``session_id`` that nothing runs (``accepted``, ``OPENING``)
    if the session has no row (deleted by hand: eve never deletes one), so no sweep offers
    them again; the turns marked."""
    no_row = ~sa.exists().where(sessions.c.id == session_id)
    dropped = c.execute(
        accepted_places.update()
        .where(
            accepted_places.c.session_id == session_id,
            accepted_places.c.state.in_(["accepted", OPENING]),
            no_row,
        )
        .values(state="done", input=None)
        .returning(accepted_places.c.turn)
    )
    return sorted(int(turn) for turn in dropped.scalars())


def reopen(c: Connection, place: Place) -> None:
    """Undo ``claim_settled`` when what it settled could not be written: the next sweep tries
    again."""
    c.execute(
        accepted_places.update()
        .where(
            accepted_places.c.session_id == place.session_id,
            accepted_places.c.turn == place.turn,
        )
        .values(state=place.state)
    )


def _forgettable(before: float) -> sa.ColumnElement[bool]:
    """A done place accepted before ``before`` with no unfinished place ahead of it in its
    session: nothing reads it again. The sweep only reads places not done; a later place
    done is what tells it an earlier one was overtaken, so those behind an unfinished
    place stay until it is done."""
    ahead = accepted_places.alias("ahead")
    unfinished_ahead = sa.exists().where(
        ahead.c.session_id == accepted_places.c.session_id,
        ahead.c.turn < accepted_places.c.turn,
        ahead.c.state != "done",
    )
    return sa.and_(
        accepted_places.c.state == "done",
        accepted_places.c.accepted_at < before,
        ~unfinished_ahead,
    )


def forget_delivered(c: Connection, *, before: float, dry_run: bool) -> int:
    """Delete (or, in a dry run, count) the places retention may forget (``_forgettable``).
    A turn's number comes from its session row and a key's answer from
    ``eve_idempotency``, so neither changes when its place goes."""
    if dry_run:
        counted = sa.select(sa.func.count()).select_from(accepted_places)
        return int(c.execute(counted.where(_forgettable(before))).scalar_one())
    return int(c.execute(accepted_places.delete().where(_forgettable(before))).rowcount)
