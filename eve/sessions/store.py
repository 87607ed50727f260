"""eve's own tables beside DBOS's (``tables.py``), read and written: sessions, checkpoints,
the event log, input requests and workers.

DBOS holds the workflows, their queue and messages; these tables hold what a reader asks
for by session (the event log, the checkpoint a turn starts from) and what a turn's body
reads as it (re)starts, in one read (``turn_progress``: its progress, its step records
from ``step_records.py``, its checkpoint). Methods are synchronous
SQLAlchemy Core; async callers run them in a thread (``asyncio.to_thread``).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from eve.auth.principal import OPERATOR, OPERATOR_REF, Principal, PrincipalKind, PrincipalRef
from eve.errors import CheckpointMissing, DatabaseTooNew, DatabaseUnavailable
from eve.sessions.accepted import PlaceStarts
from eve.sessions.database_errors import failing_fast, failure_kind
from eve.sessions.db_retry import retried
from eve.sessions.event_inserts import insert_events
from eve.sessions.group_commit import joined
from eve.sessions.pg_appends import append_with_record, first_record
from eve.sessions.pg_notifier import PgNotifier
from eve.sessions.pg_pools import background_engine, each_commits, request_engine
from eve.sessions.pg_progress import ProgressRead, read_progress
from eve.sessions.pg_turn_end import body_end, end_body
from eve.sessions.pg_turn_end import install as install_body_end
from eve.sessions.prepared_sql import run_prepared
from eve.sessions.sqlite import sqlite_engine, store_gate
from eve.sessions.sqlite_gate import SqliteGate
from eve.sessions.step_records import read_records
from eve.sessions.store_lanes import lane
from eve.sessions.tables import (
    checkpoints,
    create_tables,
    events,
    input_requests,
    sessions,
    workers,
)
from eve.sessions.wal_checkpoints import dispose_engine

T = TypeVar("T")

#: the events a turn or reset workflow's body emits last (after its checkpoint is saved)
BODY_ENDS = ("session.waiting", "session.completed", "session.reset")


@dataclass(frozen=True, kw_only=True)
class SessionRow:
    id: str
    created_at: float
    status: str
    ended_reason: str | None
    next_turn: int
    #: who created it: the operator, for a session an eve from before ownership made
    owner: PrincipalRef = OPERATOR_REF
    #: the session this one was forked from (``forking.py``), if it is a fork
    forked_from: str | None = None


def owner_ref(owner_id: str | None, owner_kind: str | None) -> PrincipalRef:
    """The owner a session row names; the operator where it names none (an older eve's)."""
    if owner_id is None or owner_kind is None:
        return OPERATOR_REF
    return PrincipalRef(id=owner_id, kind=cast(PrincipalKind, owner_kind))


@dataclass(frozen=True, kw_only=True)
class EventRow:
    workflow_id: str | None
    body_seq: int | None
    step_key: str | None
    attempt: int | None
    payload: str


@dataclass(frozen=True, kw_only=True)
class PendingRequest:
    """An input request still waiting: the workflow to answer, and the options it offers
    (``None``: a tool approval's approve and deny)."""

    workflow_id: str
    options: list[str] | None
    #: the principal whose turn asks (the operator, for a request from before turns had one)
    asker: PrincipalRef = OPERATOR_REF
    #: who else may answer (``role:finance``), or None
    answer_by: str | None = None
    #: a form's fields as a JSON Schema (an MCP server's elicitation), or None
    form: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class StartingCheckpoint:
    """The checkpoint version a workflow body starts from, and its data (None: empty)."""

    version: int
    data: str | None


@dataclass(frozen=True, kw_only=True)
class TurnProgress:
    """What a (re)started turn workflow already wrote: to the log, and as step records."""

    last_body_seq: int
    #: the highest attempt per step key
    attempts: dict[str, int]
    #: how many events of each ``(step key, attempt)`` reached the log
    written: dict[tuple[str, int], int] = field(default_factory=dict)
    #: the body's last event is in the log (``session.waiting`` …): it ran to its end, and
    #: only DBOS's record of that was lost (a crash, a write that failed)
    finished: bool = False
    #: the workflow's step records by key (``durable_steps.py``), when asked for
    records: dict[str, str] = field(default_factory=dict)
    #: the checkpoint the body starts from, when asked for (``checkpoint_steps.py``)
    checkpoint: StartingCheckpoint | None = None
    #: its records are DBOS steps: an older eve started it (``durable_steps.legacy_steps``)
    legacy_steps: bool = False
    #: the session's next free event index when the body started, when asked for: its
    #: writer starts from it (a write finding it taken reads it again: ``event_log.py``)
    next_index: int | None = None
    #: the session was asked to cancel the body's turn before the body started
    cancel_requested: bool = False

    @property
    def restarted(self) -> bool:
        """The log holds events of this body: it ran before (a recovery, a rerun)."""
        return self.last_body_seq >= 0 or bool(self.attempts)


def current_checkpoint() -> sa.ColumnElement[str | None]:
    """A session row's current checkpoint, as a column (``checkpoint``) of a select from
    ``eve_sessions``: its version's, or one an older eve kept in the row."""
    versioned = (
        sa.select(checkpoints.c.data)
        .where(
            checkpoints.c.session_id == sessions.c.id,
            checkpoints.c.version == sessions.c.checkpoint_version,
        )
        .scalar_subquery()
    )
    return sa.func.coalesce(versioned, sessions.c.checkpoint).label("checkpoint")


# The statements a turn runs, built once: SQLAlchemy builds a statement and computes its
# cache key on every call otherwise, three times the cost of running it on SQLite. Bound
# parameters are named ``b_…``: a column's own name is reserved in an UPDATE's SET clause.
_SESSION = sessions.c.id == sa.bindparam("b_session")
_SESSION_ROW = sa.select(
    sessions.c.id,
    sessions.c.created_at,
    sessions.c.status,
    sessions.c.ended_reason,
    sessions.c.next_turn,
    sessions.c.owner_id,
    sessions.c.owner_kind,
    sessions.c.forked_from,
).where(_SESSION)
_CLAIM_TURN = (
    sessions.update()
    .where(_SESSION, sessions.c.status == "active")
    .values(next_turn=sessions.c.next_turn + 1)
    .returning(sessions.c.next_turn)
)
# a save's usual case: the version before the previous one (the only older one a save
# leaves) becomes the new one, its row written over, where dropping it and inserting
# another took two statements; not when the new one is there already (a replayed save)
_SAVED = checkpoints.alias("saved")
_RECYCLE_CHECKPOINT = (
    checkpoints.update()
    .where(
        checkpoints.c.session_id == sa.bindparam("b_session"),
        checkpoints.c.version == sa.bindparam("b_version") - 2,
        ~sa.exists().where(
            _SAVED.c.session_id == sa.bindparam("b_session"),
            _SAVED.c.version == sa.bindparam("b_version"),
        ),
    )
    .values(
        version=sa.bindparam("b_version"),
        data=sa.bindparam("b_data"),
        saved_by=sa.bindparam("b_saved_by"),
    )
)
# otherwise (a session's first saves, a replayed one), one statement for both: the version
# overwritten (a replayed save) and the old ones
_DROP_CHECKPOINTS = checkpoints.delete().where(
    checkpoints.c.session_id == sa.bindparam("b_session"),
    sa.or_(
        checkpoints.c.version == sa.bindparam("b_version"),
        checkpoints.c.version < sa.bindparam("b_version") - 1,
    ),
)
_CURRENT_VERSION = (
    sessions.update()
    .where(_SESSION)
    .values(checkpoint_version=sa.bindparam("b_version"), checkpoint=None)
)
# PostgreSQL: the usual case's recycle and the session's pointer to it in one statement (the
# recycle a WITH clause, which runs to its end whether or not it is read): a round trip of a
# turn's end fewer; the statement returns how many rows the recycle wrote
_RECYCLED = _RECYCLE_CHECKPOINT.returning(checkpoints.c.version).cte("recycled")
_RECYCLE_AND_POINT = _CURRENT_VERSION.add_cte(_RECYCLED).returning(
    sa.select(sa.func.count()).select_from(_RECYCLED).scalar_subquery()
)
_WITH_CHECKPOINT = sessions.outerjoin(
    checkpoints,
    sa.and_(
        checkpoints.c.session_id == sessions.c.id,
        checkpoints.c.version == sessions.c.checkpoint_version,
    ),
)
_CHECKPOINT_COLUMNS = (sessions.c.checkpoint_version, checkpoints.c.data, checkpoints.c.saved_by)
_CURRENT_CHECKPOINT = (
    sa.select(*_CHECKPOINT_COLUMNS)
    .select_from(_WITH_CHECKPOINT)
    .where(_SESSION, sessions.c.checkpoint_version.is_not(None))
)
# what a body starting reads of its session, in one statement where it took three: the
# current checkpoint (the first three columns, as ``_CURRENT_CHECKPOINT``'s), the turn it
# was asked to cancel, the log's highest index, and whether the row holds a checkpoint an
# older eve kept there (without one and with no version, it starts from none: version 0)
_BODY_START = (
    sa.select(
        *_CHECKPOINT_COLUMNS,
        sessions.c.cancel_workflow_id,
        sa.select(sa.func.max(events.c.idx))
        .where(events.c.session_id == sessions.c.id)
        .scalar_subquery(),
        sessions.c.checkpoint.is_not(None),
    )
    .select_from(_WITH_CHECKPOINT)
    .where(_SESSION)
)
_CANCEL_REQUESTED = sa.select(sessions.c.cancel_workflow_id).where(
    sessions.c.cancel_workflow_id.in_(sa.bindparam("b_ids", expanding=True))
)
_NEXT_EVENT = sa.select(sa.func.max(events.c.idx)).where(
    events.c.session_id == sa.bindparam("b_session")
)
_READ_EVENTS = (
    sa.select(events.c.payload)
    .where(
        events.c.session_id == sa.bindparam("b_session"), events.c.idx >= sa.bindparam("b_start")
    )
    .order_by(events.c.idx)
    .limit(sa.bindparam("b_limit", type_=sa.Integer))
)
_WORKFLOW_EVENTS = events.c.workflow_id == sa.bindparam("b_workflow")
# the step events counted by (step, attempt), and every group's last body position (only
# body events have one: they share the group of no step)
_PROGRESS = (
    sa.select(
        events.c.step_key,
        events.c.attempt,
        sa.func.count(),
        sa.func.max(events.c.body_seq),
    )
    .where(_WORKFLOW_EVENTS)
    .group_by(events.c.step_key, events.c.attempt)
)
_BODY_EVENT = sa.select(events.c.payload).where(
    _WORKFLOW_EVENTS, events.c.body_seq == sa.bindparam("b_seq")
)


_NEW_CHECKPOINT = checkpoints.insert()


def write_checkpoint(
    c: Connection, session_id: str, version: int, data: str | None, saved_by: str | None = None
) -> None:
    """``data`` as ``version``, the session's current one; versions before the previous go
    (in the caller's transaction: a turn's end writes it with its last events)."""
    given = {"b_session": session_id, "b_version": version}
    recycling = {**given, "b_data": data, "b_saved_by": saved_by}
    pointed = c.dialect.name == "postgresql"
    if pointed:
        recycled = c.execute(_RECYCLE_AND_POINT, recycling).scalar() or 0
    else:
        recycled = run_prepared(c, _RECYCLE_CHECKPOINT, recycling).rowcount
    if recycled != 1:
        run_prepared(c, _DROP_CHECKPOINTS, given)
        row = {"session_id": session_id, "version": version, "data": data, "saved_by": saved_by}
        run_prepared(c, _NEW_CHECKPOINT, row)
    if not pointed:
        run_prepared(c, _CURRENT_VERSION, given)


@dataclass(frozen=True, kw_only=True)
class CheckpointSave:
    """``write_checkpoint`` of one version, as data: a turn's end runs it before its place's
    (``accepted.PlaceEnds``), and on PostgreSQL the store sends both with the turn's last
    events as one call (``pg_turn_end.py``)."""

    session_id: str
    version: int
    data: str | None
    saved_by: str | None

    def __call__(self, c: Connection) -> None:
        write_checkpoint(c, self.session_id, self.version, self.data, self.saved_by)


def insert_session(c: Connection, session_id: str, *, owner: Principal, **columns: Any) -> None:
    """Insert a new, active session's row, owned by ``owner``; ``columns`` set more of it
    (a fork's checkpoint version and source)."""
    c.execute(
        sessions.insert().values(
            id=session_id,
            created_at=time.time(),
            status="active",
            next_turn=0,
            owner_id=owner.id,
            owner_kind=owner.kind,
            **columns,
        )
    )


def read_session(c: Connection, session_id: str) -> SessionRow | None:
    """The session's row, read in the caller's transaction."""
    row = c.execute(_SESSION_ROW, {"b_session": session_id}).first()
    if row is None:
        return None
    return SessionRow(
        id=row.id,
        created_at=row.created_at,
        status=row.status,
        ended_reason=row.ended_reason,
        next_turn=row.next_turn,
        owner=owner_ref(row.owner_id, row.owner_kind),
        forked_from=row.forked_from,
    )


class SessionStore:
    #: how long a call made outside a request waits for the database to come back
    #: (``db_retry.py``); a request's calls fail at once
    retry_seconds: float = 60.0
    closed: bool = False
    #: on PostgreSQL, whether a body's end is one call (``pg_turn_end.py``)
    ends_in_one_call: bool = False

    def __init__(
        self, url: str, *, synchronous: str = "NORMAL", busy_timeout: float = 30.0
    ) -> None:
        #: on SQLite, this process's transactions queue here rather than in SQLite's busy
        #: handler (``sqlite_gate.py``)
        self.gate: SqliteGate | None = None
        #: on PostgreSQL, tells every worker's listener of committed events (``pg_notifier.py``)
        self.notifier: PgNotifier | None = None
        #: on PostgreSQL, the connections of requests' transactions (``pg_pools.py``)
        self.request_engine: Engine | None = None
        #: how long a write waits for another process's lock on the SQLite file
        self.busy_timeout = busy_timeout
        if url.startswith("sqlite"):
            self.engine: Engine = sqlite_engine(
                url, synchronous=synchronous, busy_timeout=busy_timeout
            )
            self.gate = store_gate(self.engine)
        else:
            self.engine = background_engine(url)
            self.request_engine = request_engine(url)
            self.notifier = PgNotifier(self.engine)
        try:
            create_tables(self.engine)
            self.ends_in_one_call = self.gate is None and install_body_end(self.engine)
        except (sa.exc.SQLAlchemyError, DatabaseTooNew) as error:
            if self.request_engine is not None:
                dispose_engine(self.request_engine)
            dispose_engine(self.engine)
            if isinstance(error, DatabaseTooNew):
                raise
            # the URL may hold a password: say what failed, never where
            raise DatabaseUnavailable(
                f"cannot open the session database ({failure_kind(error)})"
            ) from None

    def close(self) -> None:
        self.closed = True
        if self.notifier is not None:
            self.notifier.close()
        if self.request_engine is not None:
            dispose_engine(self.request_engine)
        dispose_engine(self.engine)

    @contextmanager
    def _tx(self) -> Iterator[Connection]:
        if self.gate is None:
            with self._pg_engine().begin() as connection:
                yield connection
            return
        shared = joined(self.engine)
        if shared is not None:
            # a write the writer lane runs with others: their transaction
            # (``group_commit.py``)
            with shared.part() as connection:
                yield connection
            return
        with self.gate.held(), self.engine.begin() as connection:
            yield connection

    def _pg_engine(self) -> Engine:
        """On PostgreSQL, the engine of this call: a request's pool while one is answered."""
        if self.request_engine is not None and failing_fast():
            return self.request_engine
        return self.engine

    def _single(self) -> contextlib.AbstractContextManager[Connection]:
        """For work of one statement, or whose statements need no transaction in common: on
        PostgreSQL each statement commits as it runs, two round trips fewer than a
        transaction's (``pg_pools.each_commits``); on SQLite a transaction (``_tx``)."""
        if self.gate is None:
            return each_commits(self._pg_engine())
        return self._tx()

    def _read(self) -> contextlib.AbstractContextManager[Connection]:
        """A read's transaction. On SQLite it takes the gate as a write does, though in WAL
        mode it need not wait for the writer: read outside the gate, at 1,000 sessions the
        followers' reads ran dozens at once, each taking turns at the interpreter's lock
        with the event loop, and a POST's answer took 2.2 s (p50) where it took 25 to 50
        ms; nor did the turns finish any faster. So one runs at a time, a request's first,
        through the reads' own gate beside the writes' while another worker is on the file
        (``SqliteGate.reading``): under the writes' gate a turn's read waited behind the
        writer lane's groups, each waiting for the other worker's hold, and they behind
        it. What makes a read different is its lane (``thread_lanes.py``).
        On PostgreSQL a read needs no transaction: under its READ COMMITTED each statement
        reads what was committed as it started, in a transaction or not (``_single``)."""
        if self.gate is None:
            return self._single()
        return self._read_tx(self.gate)

    @contextmanager
    def _read_tx(self, gate: SqliteGate) -> Iterator[Connection]:
        with gate.reading(), self.engine.begin() as connection:
            yield connection

    @lane("write")
    @retried
    def run(self, work: Callable[[Connection], T], *, atomic: bool = True) -> T:
        """``work`` in one transaction (for a module with tables of its own here);
        ``atomic=False`` for work of one statement, or whose statements each stand alone
        (``_single``: on PostgreSQL no transaction is opened)."""
        with self._tx() if atomic else self._single() as c:
            return work(c)

    @lane("read")
    @retried
    def read(self, work: Callable[[Connection], T]) -> T:
        """``work``, which only reads, in one transaction (``_read``)."""
        with self._read() as c:
            return work(c)

    # --- sessions ----------------------------------------------------------------------

    @lane("alone")
    def create_session(
        self,
        session_id: str,
        *,
        owner: Principal = OPERATOR,
        also: Callable[[Connection], None] | None = None,
    ) -> None:
        """Insert the session row, owned by ``owner``; ``also`` runs in the same transaction
        (an idempotency record: both are written or neither)."""
        with self._tx() as c:
            insert_session(c, session_id, owner=owner)
            if also is not None:
                also(c)

    @lane("read")
    @retried
    def get_session(self, session_id: str) -> SessionRow | None:
        with self._read() as c:
            return read_session(c, session_id)

    @lane("alone")
    def claim_turn(self, session_id: str, then: Callable[[Connection, int], T]) -> T | None:
        """Take the next turn number of an active session and run ``then`` with it while
        the session's row stays locked; None when the session is not active.

        ``then`` enqueues the turn: a second claim of the same session waits until the
        first one's turn is on the queue, so turns reach the queue in the order of their
        numbers. If ``then`` raises, the number is not taken.
        """
        with self._tx() as c:
            row = c.execute(_CLAIM_TURN, {"b_session": session_id}).first()
            if row is None:
                return None
            return then(c, int(row[0]) - 1)

    @lane("write")
    @retried
    def end_session(self, session_id: str, reason: str) -> None:
        with self._tx() as c:
            c.execute(
                sessions.update()
                .where(sessions.c.id == session_id)
                .values(status="ended", ended_reason=reason)
            )

    @lane("write")
    @retried
    def end_if_unchanged(self, session_id: str, next_turn: int, reason: str) -> bool:
        """End the session unless it ended already or a turn was claimed since ``next_turn``
        was read (a message arrived meanwhile); whether this call ended it."""
        with self._tx() as c:
            ended = c.execute(
                sessions.update()
                .where(
                    sessions.c.id == session_id,
                    sessions.c.status == "active",
                    sessions.c.next_turn == next_turn,
                )
                .values(status="ended", ended_reason=reason)
            )
        return ended.rowcount == 1

    @lane("read")
    @retried
    def last_event(self, session_id: str) -> str | None:
        """The payload of the session's latest event (its ``meta.at`` says when)."""
        with self._read() as c:
            value: str | None = c.execute(
                sa.select(events.c.payload)
                .where(events.c.session_id == session_id)
                .order_by(events.c.idx.desc())
                .limit(1)
            ).scalar()
        return value

    @lane("read")
    @retried
    def load_checkpoint(self, session_id: str) -> str | None:
        """The session's current checkpoint (for a reader: a turn loads by version)."""
        with self._read() as c:
            value: str | None = c.execute(
                sa.select(current_checkpoint()).where(sessions.c.id == session_id)
            ).scalar()
        return value

    @lane("write")
    @retried
    def checkpoint_version(self, session_id: str) -> int:
        """The version of the session's current checkpoint, 0 for none; a checkpoint an
        older eve kept in the session's row becomes version 1 first."""
        with self._tx() as c:
            row = c.execute(
                sa.select(sessions.c.checkpoint_version, sessions.c.checkpoint).where(
                    sessions.c.id == session_id
                )
            ).first()
            if row is None or row[0] is not None:
                return 0 if row is None else int(row[0])
            if row[1] is None:
                return 0
            write_checkpoint(c, session_id, 1, row[1])
            return 1

    def _starting_checkpoint(
        self, session_id: str, workflow_id: str, row: Sequence[Any] | None
    ) -> StartingCheckpoint:
        """The checkpoint ``workflow_id``'s body starts from, given the session's current one
        (``row``, read with the body's progress): that one, unless this workflow saved it
        (a replay after its save), then the one it replaced, which the store keeps."""
        if row is None or (row[0] and row[1] is None):
            # no session row, a checkpoint an older eve kept in the row, or a version whose
            # row is missing (or a cleared one): the two reads say which, and raise what fits
            version = self.checkpoint_version(session_id)
            return StartingCheckpoint(version=version, data=self.checkpoint_at(session_id, version))
        if row[2] is not None and row[2] == workflow_id:
            version = int(row[0]) - 1
            return StartingCheckpoint(version=version, data=self.checkpoint_at(session_id, version))
        return StartingCheckpoint(version=int(row[0]), data=row[1])

    @lane("read")
    @retried
    def checkpoint_at(self, session_id: str, version: int) -> str | None:
        """The checkpoint ``version`` of the session (0: none, the empty one)."""
        if version == 0:
            return None
        with self._read() as c:
            row = c.execute(
                sa.select(checkpoints.c.data).where(
                    checkpoints.c.session_id == session_id, checkpoints.c.version == version
                )
            ).first()
        if row is None:
            raise CheckpointMissing(
                f"checkpoint version {version} of session {session_id} is no longer stored, "
                "so the workflow that loaded it cannot be replayed: reset the session "
                "(POST …/reset) or start a new one",
                session_id=session_id,
                version=version,
            )
        value: str | None = row[0]
        return value

    @lane("write")
    @retried
    def save_checkpoint(
        self,
        session_id: str,
        checkpoint: str | None,
        *,
        after: int | None = None,
        saved_by: str | None = None,
    ) -> int:
        """Store ``checkpoint`` (None: cleared) as the session's current one, the version
        after ``after`` (the one the saving workflow loaded; by default the current one),
        and return that version. ``saved_by``: the workflow saving it, which a replay of
        it then does not start from (``turn_progress``).

        Saving the same version again overwrites it (a replayed save writes what it wrote
        before). The version before the new one stays, for a replay of the workflow that
        saved it; older ones go: a session's workflows run one at a time, so nothing
        still running loaded them.
        """
        with self._tx() as c:
            if after is None:
                current = c.execute(
                    sa.select(sessions.c.checkpoint_version).where(sessions.c.id == session_id)
                ).scalar()
                after = int(current or 0)
            write_checkpoint(c, session_id, after + 1, checkpoint, saved_by)
        return after + 1

    # --- cancellation ------------------------------------------------------------------

    @lane("write")
    @retried
    def request_cancel(self, session_id: str, workflow_id: str) -> None:
        with self._tx() as c:
            c.execute(
                sessions.update()
                .where(sessions.c.id == session_id)
                .values(cancel_workflow_id=workflow_id)
            )

    @lane("read")
    @retried
    def cancel_requested(self, workflow_ids: Sequence[str]) -> set[str]:
        if not workflow_ids:
            return set()
        with self._read() as c:
            rows = c.execute(_CANCEL_REQUESTED, {"b_ids": list(workflow_ids)}).all()
        return {row[0] for row in rows}

    # --- the event log -----------------------------------------------------------------

    @lane("read")
    @retried
    def next_event_index(self, session_id: str) -> int:
        with self._read() as c:
            value = c.execute(_NEXT_EVENT, {"b_session": session_id}).scalar()
        return 0 if value is None else int(value) + 1

    @lane("write")
    @retried
    def append_events(
        self,
        session_id: str,
        first_index: int,
        rows: Sequence[EventRow],
        also: Sequence[Callable[[Connection], Any]] = (),
    ) -> list[Any]:
        """Append ``rows`` at ``first_index`` onward; raises IntegrityError if taken. ``also``
        run in the same transaction, after the rows (what must be durable with them: a
        turn's checkpoint and the end of its place); their results.

        On PostgreSQL every worker's listener (``pg_listener.py``) is told the session and
        its new highest index once the rows are committed, never for a rolled-back write,
        outside this transaction (``pg_notifier.py`` says why)."""
        # on PostgreSQL a body's end with its last rows is one call (``pg_turn_end.py``), and
        # the rows with a step's record one statement (``pg_appends.py``), committed as it
        # runs when nothing else rides with them
        ending = body_end(session_id, also) if self.ends_in_one_call else None
        record = first_record(also) if self.gate is None and rows else None
        done: list[Any]
        if ending is not None:
            with self._single() as c:
                done = end_body(c, session_id, first_index, rows, ending)
        elif record is not None:
            with self._single() if len(also) == 1 else self._tx() as c:
                done = [append_with_record(c, session_id, first_index, rows, record)]
                done += [work(c) for work in also[1:]]
        else:
            # the rows alone are one statement (``pg_pools._engine``): no transaction around it
            alone = not also and len(rows) <= self.engine.dialect.insertmanyvalues_page_size
            with self._single() if alone else self._tx() as c:
                if rows:
                    insert_events(c, session_id, first_index, rows)
                done = [work(c) for work in also]
        if rows and self.notifier is not None:
            self.notifier.committed(session_id, first_index + len(rows) - 1)
        return done

    @lane("read")
    @retried
    def event_id_at(self, session_id: str, index: int) -> str | None:
        """The id of the event at ``index`` (its ``meta.id``), if there is one."""
        with self._read() as c:
            payload = c.execute(
                sa.select(events.c.payload).where(
                    events.c.session_id == session_id, events.c.idx == index
                )
            ).scalar()
        if payload is None:
            return None
        found: str | None = json.loads(payload).get("meta", {}).get("id")
        return found

    @lane("read")
    @retried
    def read_events(self, session_id: str, start: int, limit: int = 500) -> list[str]:
        with self._read() as c:
            rows = c.execute(
                _READ_EVENTS, {"b_session": session_id, "b_start": start, "b_limit": limit}
            ).all()
        return [row[0] for row in rows]

    @lane("write")
    @retried
    def turn_progress(
        self,
        workflow_id: str,
        *,
        records_of: str | None = None,
        checkpoint_of: str | None = None,
        log_of: str | None = None,
        cancel_of: str | None = None,
        also: Callable[[Connection], None] | None = None,
    ) -> TurnProgress:
        """What the body logging as ``workflow_id`` wrote, in one read: with the step records
        of ``records_of`` (the DBOS workflow running it: a rerun logs as its turn), the
        checkpoint of session ``checkpoint_of`` that workflow starts from, the next event
        index of session ``log_of`` and whether it was asked to cancel ``cancel_of``; ``also``
        runs in the same transaction (a body marks its place started: ``accepted.py``).
        One transaction rather than one per question: each costs a turn a thread hop."""
        current = None
        empty = False  # the session has no checkpoint of any eve's: the body starts from none
        next_index = None
        cancelled = False
        # on PostgreSQL the reads and the place's start are one statement (``pg_progress.py``)
        one = self.gate is None and (also is None or isinstance(also, PlaceStarts))
        with self._single() if one else self._tx() as c:
            if one:
                read = read_progress(
                    c,
                    workflow_id,
                    records_of=records_of,
                    log_of=log_of,
                    starts=also.workflow_id if isinstance(also, PlaceStarts) else None,
                )
            else:
                read = self._progress_reads(c, workflow_id, records_of, log_of, also)
            grouped, records, start = read.grouped, read.records, read.start
            rows = [(key, attempt, n) for key, attempt, n, _ in grouped if key is not None]
            last = max((seq for *_, seq in grouped if seq is not None), default=None)
            final = None
            if last is not None:
                final = c.execute(_BODY_EVENT, {"b_workflow": workflow_id, "b_seq": last}).scalar()
            if log_of is not None:
                if start is None:  # no session row: its log, if any, says where it ends
                    high = read.high
                else:
                    version, _, _, asked, high, legacy = start
                    cancelled = cancel_of is not None and asked == cancel_of
                    if checkpoint_of == log_of:
                        current = start if version is not None else None
                        empty = version is None and not legacy
                next_index = 0 if high is None else int(high) + 1
            if checkpoint_of is not None and checkpoint_of != log_of:
                current = c.execute(_CURRENT_CHECKPOINT, {"b_session": checkpoint_of}).first()
        finished = final is not None and json.loads(final).get("type") in BODY_ENDS
        starting = None
        if checkpoint_of is not None and not finished:
            # (a body that ran to its end starts nothing: whatever it loaded may be gone)
            starting = (
                StartingCheckpoint(version=0, data=None)
                if empty
                else self._starting_checkpoint(checkpoint_of, records_of or workflow_id, current)
            )
        attempts: dict[str, int] = {}
        for key, attempt, _ in rows:
            attempts[key] = max(attempts.get(key, -1), int(attempt))
        return TurnProgress(
            last_body_seq=-1 if last is None else int(last),
            attempts=attempts,
            written={(key, int(attempt)): int(n) for key, attempt, n in rows},
            finished=finished,
            records=records,
            checkpoint=starting,
            next_index=next_index,
            cancel_requested=cancelled,
        )

    def _progress_reads(
        self,
        c: Connection,
        workflow_id: str,
        records_of: str | None,
        log_of: str | None,
        also: Callable[[Connection], None] | None,
    ) -> ProgressRead:
        """``turn_progress``'s reads as statements of a transaction (SQLite, or work other
        than a place's start to run with them)."""
        if also is not None:
            # the write first: on SQLite the transaction holds the lock from here, where a
            # read first could find it taken when it turns into a write
            also(c)
        grouped = c.execute(_PROGRESS, {"b_workflow": workflow_id}).all()
        start = high = None
        if log_of is not None:
            start = c.execute(_BODY_START, {"b_session": log_of}).first()
            if start is None:
                high = c.execute(_NEXT_EVENT, {"b_session": log_of}).scalar()
        return ProgressRead(
            grouped=[tuple(row) for row in grouped],
            records={} if records_of is None else read_records(c, records_of),
            start=None if start is None else tuple(start),
            high=high,
        )

    # --- input requests ----------------------------------------------------------------

    @lane("write")
    @retried
    def add_input_request(
        self,
        request_id: str,
        session_id: str,
        workflow_id: str,
        options: Sequence[str] | None = None,
        *,
        asker: Principal = OPERATOR,
        answer_by: str | None = None,
    ) -> None:
        """Open a request, answerable by ``asker`` (whose turn asks), an operator, or
        ``answer_by`` (``role:<name>``)."""
        with self._tx() as c:
            exists = c.execute(
                sa.select(input_requests.c.request_id).where(
                    input_requests.c.request_id == request_id
                )
            ).first()
            if exists is None:
                c.execute(
                    input_requests.insert().values(
                        request_id=request_id,
                        session_id=session_id,
                        workflow_id=workflow_id,
                        status="pending",
                        options=None if options is None else json.dumps(list(options)),
                        asker_id=asker.id,
                        asker_kind=asker.kind,
                        answer_by=answer_by,
                    )
                )

    @lane("read")
    @retried
    def pending_request(self, session_id: str, request_id: str) -> PendingRequest | None:
        """What waits on ``request_id`` in this session, if it still waits."""
        with self._read() as c:
            row = c.execute(
                sa.select(
                    input_requests.c.workflow_id,
                    input_requests.c.options,
                    input_requests.c.asker_id,
                    input_requests.c.asker_kind,
                    input_requests.c.answer_by,
                    input_requests.c.form,
                ).where(
                    input_requests.c.request_id == request_id,
                    input_requests.c.session_id == session_id,
                    input_requests.c.status == "pending",
                )
            ).first()
        if row is None:
            return None
        return PendingRequest(
            workflow_id=row.workflow_id,
            options=None if row.options is None else list(json.loads(row.options)),
            asker=owner_ref(row.asker_id, row.asker_kind),
            answer_by=row.answer_by,
            form=None if row.form is None else dict(json.loads(row.form)),
        )

    @lane("write")
    @retried
    def resolve_input_request(self, request_id: str) -> None:
        with self._tx() as c:
            c.execute(
                input_requests.update()
                .where(input_requests.c.request_id == request_id)
                .values(status="resolved")
            )

    # --- workers -----------------------------------------------------------------------

    @lane("write")
    @retried
    def heartbeat(self, executor_id: str, version: str, holder: str) -> bool:
        """Beat as ``holder`` of ``executor_id``; False (and no write) if another process
        holds the id now (``worker_identity.py``)."""
        now = time.time()
        with self._tx() as c:
            done = c.execute(
                workers.update()
                .where(
                    workers.c.executor_id == executor_id,
                    # a row an older eve beat in names no holder: this process's now
                    sa.or_(workers.c.holder == holder, workers.c.holder.is_(None)),
                )
                .values(heartbeat_at=now, application_version=version, holder=holder)
            )
            if done.rowcount == 1:
                return True
            taken = c.execute(
                sa.select(workers.c.holder).where(workers.c.executor_id == executor_id)
            ).first()
            if taken is not None:
                return False
            # a sibling found this worker stale and adopted its turns (``claim_stale_worker``)
            c.execute(
                workers.insert().values(
                    executor_id=executor_id,
                    application_version=version,
                    heartbeat_at=now,
                    holder=holder,
                )
            )
        return True

    @lane("read")
    @retried
    def stale_workers(self, version: str, older_than: float) -> list[str]:
        with self._read() as c:
            rows = c.execute(
                sa.select(workers.c.executor_id).where(
                    workers.c.application_version == version, workers.c.heartbeat_at < older_than
                )
            ).all()
        return [row[0] for row in rows]

    @lane("write")
    @retried
    def claim_stale_worker(self, executor_id: str, older_than: float) -> bool:
        """Remove a stale worker's row; only the one caller that removes it adopts its turns."""
        with self._tx() as c:
            done = c.execute(
                workers.delete().where(
                    workers.c.executor_id == executor_id, workers.c.heartbeat_at < older_than
                )
            )
        return bool(done.rowcount == 1)
