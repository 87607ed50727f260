"""``SessionService``: durable sessions as the HTTP API and ``eve dev`` use them.

Create a session, send it messages (each becomes a turn, queued behind the session's
running turn), answer its input requests, cancel, reset or fork it, and read its event log. A
message is text, or a ``UserMessage`` whose images and documents are checked against the
service's ``AttachmentLimits`` before its turn is queued.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import secrets
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import msgspec
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from eve._attachments import AttachmentLimits, check_attachments
from eve._redact import redact
from eve._session_summary import SessionPage, SessionSummary
from eve.auth.principal import OPERATOR, Principal, ref_of
from eve.context.active import EveContext, use_context
from eve.errors import (
    InputOptionUnknown,
    InputRequestNotPending,
    MessageTooLong,
    QueueFull,
    SessionNotActive,
    SessionNotFound,
    TaskNotWaiting,
)
from eve.events import Invocation, SessionEvent, SessionStartedData
from eve.execution.events import EventEmitter
from eve.execution.memory import with_memory
from eve.execution.setup import AgentSetup
from eve.memory.access import MemoryHost
from eve.messages import DocumentPart, TextPart, UserMessage, UserPart, user_message
from eve.runtime.connections import close_pool
from eve.runtime.server_asks import check_form_answer
from eve.sessions.accepted import Kind, Place, accept
from eve.sessions.access import by_role, check_answer, may_see, owned_by, owner_to_be, seen_by
from eve.sessions.admission import Admission
from eve.sessions.checkpoint import SessionCheckpoint, decode_checkpoint, encode_checkpoint
from eve.sessions.claim_now import (
    NOT_NOW,
    LoopClaims,
    NotNow,
    claim_begins,
    note_claim,
    patience_on,
)
from eve.sessions.compact_workflow import compact_workflow_id
from eve.sessions.compute_gate import ComputeGate
from eve.sessions.engine import DurableEngine
from eve.sessions.event_log import EventLog, Pending
from eve.sessions.forking import fork_session
from eve.sessions.form_requests import give_answer, wake
from eve.sessions.idempotency import (
    CREATE_ROUTE,
    Answer,
    IdempotencyKey,
    Replayed,
    key_for,
    lookup,
    record,
    replay_if_answered,
)
from eve.sessions.idle_timer import look, start_idle_timer
from eve.sessions.input_requests import APPROVAL_OPTIONS
from eve.sessions.listing import list_sessions
from eve.sessions.opening import Work, claim_new, new_owner, open_session, take_over
from eve.sessions.pg_claim_now import TURN_MARK, claim_message, loop_claims_for, message_claim
from eve.sessions.pg_create_now import SessionCreate, create_session
from eve.sessions.pg_listener import PgListener
from eve.sessions.request_answers import Accepted
from eve.sessions.settings import SessionSettings
from eve.sessions.sqlite_changes import SqliteChanges
from eve.sessions.store import PendingRequest, SessionRow, SessionStore, read_session
from eve.sessions.summary import summarize
from eve.sessions.task_starts import task_takes_events
from eve.sessions.tasks import turn_of
from eve.sessions.turn_limit import TurnLimit
from eve.sessions.turn_workflow import (
    TurnRuntime,
    install_runtime,
    reset_workflow_id,
    sent_input,
    turn_input,
    turn_workflow_id,
)
from eve.wire.mailbox import AnswerMail, CancelMail, EventMail
from eve.wire.requests import InputResponse

log = logging.getLogger("eve.sessions")
T = TypeVar("T")

#: the default cap on one message's length, in characters
MAX_MESSAGE_CHARS = 100_000


def new_session_id() -> str:
    """``ses_`` and 192 random bits: unguessable, so an id is as good as a capability."""
    return "ses_" + secrets.token_urlsafe(24)


OPTION_IDS = tuple(option.id for option in APPROVAL_OPTIONS)


class SessionService:
    def __init__(
        self,
        setup: AgentSetup,
        settings: SessionSettings,
        *,
        concurrency: int = 100,
        max_message_chars: int = MAX_MESSAGE_CHARS,
        attachment_limits: AttachmentLimits | None = None,
        max_queued_turns: int | None = None,
    ) -> None:
        #: memory slots keep their entries in this service's database, written as
        #: durable steps (``eve.memory.access.MemoryHost``)
        self.memory = MemoryHost(
            app_root=setup.app_root,
            database_url=settings.eve_url,
            # opened on a slot's first use, after ``start`` has opened the store
            engine=lambda: self.store.engine,
            durable=True,
        )
        self.setup = with_memory(setup, self.memory)
        self.settings = settings
        self.concurrency = concurrency
        #: turns waiting in the queue past which a message is refused (``admission.py``)
        self.max_queued_turns = max_queued_turns or settings.max_queued_turns
        self.max_message_chars = max_message_chars
        self.attachment_limits = attachment_limits or AttachmentLimits()
        self._tasks: list[asyncio.Task[None]] = []
        #: opens of sessions made on the loop, after their answers (``_open_after``)
        self._opens: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self.store = await asyncio.to_thread(
            SessionStore,
            self.settings.eve_url,
            synchronous=self.settings.sqlite_synchronous,
            busy_timeout=self.settings.sqlite_busy_timeout,
        )
        self.log = EventLog(self.store)
        self.loop_claims = LoopClaims(self.store)
        #: on PostgreSQL, a message's claim in one round trip on the loop (None: in a thread)
        self.pg_claims = loop_claims_for(self.store)
        #: how this worker hears of events other processes write (``event_feed.py``)
        self.changes: PgListener | SqliteChanges = (
            PgListener(self.store.engine, self.log.feeds)
            if self.settings.is_postgres
            else SqliteChanges(self.store, self.log.feeds)
        )
        self.runtime = TurnRuntime(
            setup=self.setup,
            store=self.store,
            log=self.log,
            gate=ComputeGate(self.concurrency),
        )
        install_runtime(self.runtime)
        self.engine = DurableEngine(self.settings, self.store, self.runtime)
        await self.engine.start()
        await self.changes.start()
        gate = self.runtime.gate
        self.admission = Admission(
            self.max_queued_turns, self.engine.queued_turns, waiting=lambda: gate.waiting
        )
        self._limit_starts()
        self._tasks.append(asyncio.create_task(self.runtime.watch_cancellations()))

    def _limit_starts(self) -> None:
        """Start places through this worker's limit on places running at once
        (``turn_limit.py``): a message's, the next one a body's end starts; the sweep leaves
        a place the limit holds alone."""
        self.turn_limit = TurnLimit(start=self.engine.start_soon, setting=self.settings.turn_limit)
        self.runtime.start_next = self.turn_limit.offer
        sweep, limit, deliver = self.engine.sweep, self.turn_limit, self.engine.deliver

        async def unless_held(session_id: str) -> None:
            if not limit.holds(session_id):
                await deliver(session_id)

        sweep.deliver = unless_held
        sweep.finish_open = self._finish_open
        self._tasks.append(asyncio.create_task(self.turn_limit.control()))

    async def stop(self) -> None:
        for task in [*self._tasks, *self._opens]:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.engine.stop()
        await self.changes.stop()
        # the MCP servers this worker started: a stdio server's process group ends here
        await close_pool()
        await self.log.drain()
        install_runtime(None)
        self.loop_claims.close()
        if self.pg_claims is not None:
            self.pg_claims.close()
        self.store.close()
        self.memory.close()

    # --- sessions ----------------------------------------------------------------------

    async def create(
        self,
        message: str | UserMessage | None = None,
        *,
        key: str | None = None,
        principal: Principal = OPERATOR,
        sender: Principal | None = None,
        invocation: Invocation | None = None,
    ) -> Accepted:
        """A new session owned by ``principal``, with a first turn when ``message`` is
        given, sent by ``sender`` (``principal`` unless a channel acts for a person);
        ``key`` is the request's ``Idempotency-Key``; ``invocation`` says what started it
        when no request did (a schedule's tick), in its ``session.started``."""
        checked = None if message is None else self._checked(message)
        request = None if checked is None else turn_input(checked)
        idem = key_for(CREATE_ROUTE, key, request, principal=principal)
        if checked is not None and invocation is None:
            on_loop = await self._create_on_loop(checked, idem, principal, sender, key=key)
            if not isinstance(on_loop, NotNow):
                return on_loop
        if (answer := await self._answered(idem)) is not None:
            return await self._replayed_create(answer, checked, principal, sender, key, invocation)
        if checked is not None:
            await self.admission.check()
        session_id = new_session_id()
        accepted = Accepted(session_id=session_id, turn_id=None if checked is None else "turn_0")
        owner = new_owner()

        def made(c: Connection) -> None:
            record(c, idem, accepted.answer())
            claim_new(c, session_id, owner)

        try:
            await asyncio.to_thread(
                self.store.create_session, session_id, owner=principal, also=made
            )
        except sa.exc.IntegrityError:
            # the same key, sent twice at once: the other request made the session
            if (answer := await self._answered(idem)) is None:
                raise
            return await self.create(
                message, key=key, principal=principal, sender=sender, invocation=invocation
            )
        await self._open(session_id, checked, principal, sender, owner=owner, invocation=invocation)
        return accepted

    async def _replayed_create(
        self,
        answer: Answer,
        message: UserMessage | None,
        principal: Principal,
        sender: Principal | None,
        key: str | None,
        invocation: Invocation | None = None,
    ) -> Accepted:
        accepted = Accepted.replay(answer)
        # the first request may still be opening the session, or have died doing so
        await self._open(
            accepted.session_id, message, principal, sender, key=key, invocation=invocation
        )
        return accepted

    async def _create_on_loop(
        self,
        message: UserMessage,
        idem: IdempotencyKey | None,
        principal: Principal,
        sender: Principal | None,
        *,
        key: str | None,
    ) -> Accepted | NotNow:
        """On PostgreSQL, a create with its first message in one round trip on the loop
        (``pg_create_now.py``): answered once the row, its open claim, the first turn (not
        startable yet) and the key are committed; the open follows the answer
        (``_open_after``). ``NOT_NOW``: made in a thread, nothing of it committed."""
        claims = self.pg_claims
        if claims is None:
            return NOT_NOW
        try:
            await self.admission.check()
        except QueueFull:
            if idem is None:
                raise
            return NOT_NOW  # a repeat is answered even so: the thread's create looks first
        since = claim_begins()
        session_id, owner = new_session_id(), new_owner()
        accepted = Accepted(session_id=session_id, turn_id="turn_0")
        create = SessionCreate(
            session_id=session_id,
            owner=ref_of(principal),
            open_owner=owner,
            input=sent_input(message, sender or principal),
            workflow_id=turn_workflow_id(session_id, 0),
            key=idem,
            answer=json.dumps(accepted.answer()),
        )
        try:
            if isinstance(await create_session(claims, create), NotNow):
                return NOT_NOW
        except Replayed as replayed:
            return await self._replayed_create(replayed.answer, message, principal, sender, key)
        note_claim("loop", since)
        opening = asyncio.create_task(self._open_after(session_id, principal, owner))
        self._opens.add(opening)
        opening.add_done_callback(self._opens.discard)
        return accepted

    async def _open_after(self, session_id: str, principal: Principal, owner: str) -> None:
        """Open a session made on the loop, its ``202`` sent, then start its first turn. A
        failure lets the claim go (``opening.py``): the sweep, or a replay, finishes it."""
        try:
            place = await open_session(
                self.store, session_id, self._open_work(session_id, principal), owner=owner
            )
        except Exception as error:
            log.warning(
                "session %s: its open failed (%s); the sweep finishes it",
                session_id,
                type(error).__name__,
            )
            return
        self._start_first(place)

    async def _finish_open(self, session_id: str) -> bool:
        """The sweep's: finish the open of a session whose first turn waits for it and whose
        holder is gone; False if the session has no row. Its hooks see the owner as the row
        names it (without the claims the creator's token had)."""
        row = await asyncio.to_thread(self.store.get_session, session_id)
        if row is None:
            return False
        owner = Principal(id=row.owner.id, kind=row.owner.kind)
        self._start_first(
            await take_over(self.store, session_id, self._open_work(session_id, owner))
        )
        return True

    def _open_work(self, session_id: str, principal: Principal) -> Work:
        """The open of a session whose first turn is accepted already (``_create_on_loop``)."""

        async def work() -> None:
            await self._publish_started(session_id, principal)
            await self._watch_idle(session_id)

        return work

    def _start_first(self, place: Place | None) -> None:
        """Start a first turn its session's open made startable (``accepted.release_opening``)."""
        if place is not None:
            self.turn_limit.offer(place, contextvars.copy_context())

    async def _answered(self, idem: IdempotencyKey | None) -> Answer | None:
        if idem is None:
            return None
        return await asyncio.to_thread(self.store.run, lambda c: lookup(c, idem))

    async def _open(
        self,
        session_id: str,
        message: UserMessage | None,
        principal: Principal,
        sender: Principal | None,
        *,
        owner: str | None = None,
        key: str | None = None,
        invocation: Invocation | None = None,
    ) -> None:
        """Return once the session is open, opening it exactly once (``opening.py``):
        ``owner`` holds the claim of the create that made the row; a replay has none."""

        async def work() -> None:
            await self._publish_started(session_id, principal, invocation)
            await self._watch_idle(session_id)
            if message is not None:
                await self._enqueue(session_id, message, sender or principal, first=True)

        # a replay that took over the open of a session made on the loop starts its turn
        self._start_first(await open_session(self.store, session_id, work, owner=owner, key=key))

    async def _publish_started(
        self, session_id: str, principal: Principal, invocation: Invocation | None = None
    ) -> None:
        """``session.started`` and what its hooks emit, into the log, their state saved
        before them: a first turn never starts without it. Nothing, if an earlier holder of
        the open died once its events were in the log."""
        if await asyncio.to_thread(self.store.next_event_index, session_id) > 0:
            return
        emitted: list[SessionEvent] = []
        emitter = EventEmitter(emitted.append, session_id=session_id, hooks=self.setup.hooks)
        context = EveContext(session_id=session_id, principal=principal)
        with use_context(context):
            await emitter.emit(SessionStartedData(invocation=invocation))
        await self._save_initial_state(session_id, context.snapshot())
        writer = self.log.writer(session_id)
        for event in emitted:
            writer.add(Pending(event=event))
        await writer.flush()
        self.log.forget(session_id)

    async def _save_initial_state(self, session_id: str, state: dict[str, Any]) -> None:
        """What session.started hooks set is where the first turn starts from."""
        if state:
            initial = encode_checkpoint(SessionCheckpoint(state=state))
            await asyncio.to_thread(self.store.save_checkpoint, session_id, initial)

    async def send(
        self,
        session_id: str,
        message: str | UserMessage,
        *,
        key: str | None = None,
        principal: Principal = OPERATOR,
        sender: Principal | None = None,
    ) -> Accepted:
        """A new turn of the session with ``message``. ``principal`` must be allowed to
        send to the session; the turn is sent by ``sender`` (``principal`` unless a channel
        acts for a person): it is the turn's ``ctx.principal`` and the asker of its input
        requests."""
        checked = self._checked(message)
        idem = key_for(
            f"POST /session/{session_id}",
            key,
            ["message", turn_input(checked)],
            principal=principal,
        )
        # the claim's one transaction checks the rest (a repeat, the session, who asks): an
        # answer under load waits for one write, not a read and a write, each a thread's
        # turn at the interpreter's lock (``_refused``)
        try:
            await self.admission.check()
            accepted = await self._enqueue(
                session_id, checked, sender or principal, idem=idem, seer=principal
            )
        except (QueueFull, SessionNotActive) as refusal:
            return await self._refused(session_id, idem, principal, refusal)
        if not accepted.replayed:
            # a session from before its agent had a timeout gets its timer now
            await self._watch_idle(session_id)
        return accepted

    async def _refused(
        self,
        session_id: str,
        idem: IdempotencyKey | None,
        principal: Principal,
        refusal: QueueFull | SessionNotActive,
    ) -> Accepted:
        """Why a message was not accepted, in this order: a repeat of an answered request is
        answered again (even once the session has ended, or the queue is full); a session
        ``principal`` may not message says why; else ``refusal`` is raised (the queue is
        full, or the session ended since it was looked at)."""
        if (answer := await self._answered(idem)) is not None:
            return Accepted.replay(answer)
        await self.require_active(session_id, principal=principal)
        raise refusal

    async def _enqueue(
        self,
        session_id: str,
        message: UserMessage,
        sender: Principal,
        *,
        idem: IdempotencyKey | None = None,
        first: bool = False,
        seer: Principal | None = None,
    ) -> Accepted:
        """Accept ``message``'s turn; ``seer``: who asks, who must be allowed to see the
        session (checked in the claim's transaction, which a refusal rolls back)."""

        def claimed(c: Connection, turn: int) -> tuple[Accepted, Place | None]:
            replay_if_answered(c, idem)
            if seer is not None and not seer.is_operator:
                row = read_session(c, session_id)
                if row is None or not may_see(row.owner, seer):
                    raise SessionNotActive(
                        f"no active session {session_id}", session_id=session_id, reason="unknown"
                    )
            if first and turn != 0:
                raise Replayed({"sessionId": session_id, "turnId": "turn_0"})
            # the turn's input, stored: _checked redacted its secrets
            place = accept(
                c,
                session_id=session_id,
                turn=turn,
                kind="turn",
                workflow_id=turn_workflow_id(session_id, turn),
                turn_input=sent_input(message, sender),
            )
            accepted = Accepted(session_id=session_id, turn_id=f"turn_{turn}")
            record(c, idem, accepted.answer())
            return accepted, place

        try:
            claim = await self._claim_on_loop(
                session_id, sent_input(message, sender), idem=idem, first=first, seer=seer
            )
            if isinstance(claim, NotNow):
                claim = await self._claim(session_id, claimed)
        except Replayed as replayed:
            return Accepted.replay(replayed.answer)
        if claim is None:
            raise SessionNotActive(
                f"session {session_id} has ended", session_id=session_id, reason="ended"
            )
        accepted, place = claim
        if place is not None:
            # started once the request is answered: the accepted row is the durable fact
            # its 202 stands for, and DBOS's write need not hold the answer up. In the
            # request's context: it fails fast rather than wait out a locked database,
            # and the sweep starts it then
            self.turn_limit.offer(place, contextvars.copy_context())
        return accepted

    async def _claim_on_loop(
        self,
        session_id: str,
        turn_input: Any,
        *,
        idem: IdempotencyKey | None,
        first: bool,
        seer: Principal | None,
    ) -> tuple[Accepted, Place | None] | NotNow | None:
        """On PostgreSQL, a message's claim in one round trip on the loop's thread
        (``pg_claim_now.py``), the asker's ownership checked in it; ``NOT_NOW`` for a claim
        it does not make: a session's first turn in a thread's open (``_open``)."""
        claims = self.pg_claims
        if claims is None or first:
            return NOT_NOW
        since = claim_begins()
        mark = Accepted(session_id=session_id, turn_id=f"turn_{TURN_MARK}").answer()
        message = message_claim(
            session_id=session_id,
            turn_input=turn_input,
            key=idem,
            answer=json.dumps(mark),
            workflow_id=lambda turn: turn_workflow_id(session_id, turn),
            owner=None if seer is None else owner_to_be(seer),
        )
        found = await claim_message(claims, message)
        if isinstance(found, tuple):
            note_claim("loop", since)
            turn, place = found
            return Accepted(session_id=session_id, turn_id=f"turn_{turn}"), place
        return found

    async def _claim(self, session_id: str, then: Callable[[Connection, int], T]) -> T | None:
        """``store.claim_turn``: on the loop's thread when the file is free at once
        (``claim_now.py``), else in a request's thread."""
        since = time.perf_counter()
        patience = patience_on(asyncio.get_running_loop())
        found = await self.loop_claims.claim_soon(session_id, then, patience=patience)
        if not isinstance(found, NotNow):
            note_claim("loop", since)
            return found
        with self.loop_claims.marked():
            found = await asyncio.to_thread(self.store.claim_turn, session_id, then)
        note_claim("thread", since)
        return found

    async def _claim_place(
        self, session_id: str, kind: Kind, workflow_id: Callable[[int], str]
    ) -> None:
        """Claim the session's next place for a reset or compaction, and start it if it
        may start now (else the place before it starts it when it ends)."""

        def claimed(c: Connection, turn: int) -> Place | None:
            return accept(
                c, session_id=session_id, turn=turn, kind=kind, workflow_id=workflow_id(turn)
            )

        place = await asyncio.to_thread(self.store.claim_turn, session_id, claimed)
        if place is not None:
            await self.engine.try_start(place)

    def _checked(self, message: str | UserMessage) -> UserMessage:
        """``message`` as its turn's input: within the limits, and with no secret in it,
        because it is stored in DBOS's tables as the workflow's input."""
        user = user_message(message) if isinstance(message, str) else message
        if len(user.text) > self.max_message_chars:
            raise MessageTooLong(
                f"the message has {len(user.text)} characters; "
                f"the limit is {self.max_message_chars}",
                limit=self.max_message_chars,
            )
        check_attachments(user.parts, self.attachment_limits)
        return UserMessage(parts=[_redacted(part) for part in user.parts])

    async def get(self, session_id: str, *, principal: Principal = OPERATOR) -> SessionRow:
        """The session's row; ``SessionNotFound`` if there is none ``principal`` may see."""
        row = await asyncio.to_thread(self.store.get_session, session_id)
        return seen_by(row, session_id, principal)

    async def summary(self, session_id: str, *, principal: Principal = OPERATOR) -> SessionSummary:
        """The session's owner, status, turns, tokens, cost and limits
        (``GET /session/{id}``)."""
        row = await self.get(session_id, principal=principal)
        raw = await asyncio.to_thread(self.store.load_checkpoint, session_id)
        limits = self.setup.agent.config.limits
        idle_left = None
        if timeout := limits.session_timeout_seconds:
            seen = await look(self.runtime, session_id, timeout)
            idle_left = 0.0 if seen.over else seen.deadline - seen.now
        return summarize(row, decode_checkpoint(raw), limits, idle_left=idle_left)

    async def list_page(
        self, *, limit: int, cursor: str | None, principal: Principal = OPERATOR
    ) -> SessionPage:
        """Up to ``limit`` sessions older than ``cursor``, newest first (``GET /sessions``):
        ``principal``'s own, or every session for an operator."""

        def page(c: Connection) -> SessionPage:
            return list_sessions(c, limit=limit, cursor=cursor, where=owned_by(principal))

        return await asyncio.to_thread(self.store.run, page)

    async def require_active(
        self, session_id: str, *, principal: Principal = OPERATOR
    ) -> SessionRow:
        """The session's row if it takes messages; ``SessionNotActive`` if it has ended,
        or ``principal`` may not see it (which says no more than that it is not active)."""
        try:
            row = await self.get(session_id, principal=principal)
        except SessionNotFound as missing:
            raise SessionNotActive(
                f"no active session {session_id}", session_id=session_id, reason="unknown"
            ) from missing
        if row.status == "active":
            # a session from before its agent had a timeout gets its timer now
            await self._watch_idle(session_id)
        if row.status != "active":
            raise SessionNotActive(
                f"session {session_id} has ended ({row.ended_reason}); start a new session",
                session_id=session_id,
                reason=row.ended_reason,
            )
        return row

    async def _watch_idle(self, session_id: str) -> None:
        """Start the session's idle timer (once: a second start is the first one)."""
        if timeout := self.setup.agent.config.limits.session_timeout_seconds:
            await start_idle_timer(session_id, timeout)

    # --- parked turns, cancel, reset -----------------------------------------------------

    async def respond(
        self,
        session_id: str,
        responses: list[InputResponse],
        *,
        key: str | None = None,
        principal: Principal = OPERATOR,
        responder: Principal | None = None,
    ) -> Accepted:
        """Answer input requests the session's turns wait on. ``principal`` must be allowed
        to see the session; the answers are given by ``responder`` (``principal`` unless a
        channel acts for a person): it must be allowed to answer each request
        (``access.may_answer``), and its id and kind go into ``input.resolved``."""
        answerer = responder or principal
        idem = key_for(
            f"POST /session/{session_id}",
            key,
            ["inputResponses", [_fingerprinted(response) for response in responses]],
            principal=principal,
        )
        if (answer := await self._answered(idem)) is not None:
            return Accepted.replay(answer)
        pendings = [await self._pending(session_id, response) for response in responses]
        row = await asyncio.to_thread(self.store.get_session, session_id)
        if row is None or not (
            may_see(row.owner, principal)
            # a holder of the role a request names may answer it, and see nothing else
            or all(pending is not None and by_role(pending, principal) for pending in pendings)
        ):
            raise SessionNotActive(
                f"no active session {session_id}", session_id=session_id, reason="unknown"
            )
        await self.require_active(session_id)
        targets = []
        for response, pending in zip(responses, pendings, strict=True):
            if pending is None:
                raise InputRequestNotPending(
                    f"input request {response.request_id} is not waiting in this session",
                    request_id=response.request_id,
                )
            check_answer(pending, response.request_id, answerer)
            options = pending.options or list(OPTION_IDS)
            if response.option_id not in options:
                raise InputOptionUnknown(
                    f"input request {response.request_id} offers {', '.join(options)}, "
                    f"not {response.option_id!r}",
                    option_id=response.option_id,
                    options=options,
                )
            if pending.form is not None:
                check_form_answer(
                    response.request_id, pending.form, response.option_id, response.values
                )
            targets.append((pending, response))
        given_by = ref_of(answerer)
        for pending, response in targets:
            if pending.form is not None:
                # the call waits inside its step, on the request's row (form_requests)
                if not await asyncio.to_thread(
                    give_answer,
                    self.store,
                    response.request_id,
                    response.option_id,
                    response.values,
                    msgspec.to_builtins(given_by),
                ):
                    raise InputRequestNotPending(
                        f"input request {response.request_id} is answered already",
                        request_id=response.request_id,
                    )
                wake(response.request_id)
                continue
            mail = AnswerMail(
                request_id=response.request_id, option_id=response.option_id, responder=given_by
            )
            await self.engine.send_input(
                pending.workflow_id, mail, key=f"answer:{response.request_id}"
            )
        accepted = Accepted(session_id=session_id, turn_id=None, status="resolved")
        if idem is not None:
            # answers are delivered once whatever happens (their DBOS keys); this only
            # spares a repeat the 409 of a request no longer waiting
            with contextlib.suppress(sa.exc.IntegrityError):
                await asyncio.to_thread(
                    self.store.run, lambda c: record(c, idem, accepted.answer())
                )
        return accepted

    async def _pending(self, session_id: str, response: InputResponse) -> PendingRequest | None:
        return await asyncio.to_thread(self.store.pending_request, session_id, response.request_id)

    async def cancel(self, session_id: str, *, principal: Principal = OPERATOR) -> bool:
        """Cancel the running turn; False when there is none (queued turns stay queued)."""
        await self.get(session_id, principal=principal)
        active = [wid for wid, status in await self.engine.active_turns(session_id)]
        turns = [wid for wid in active if turn_of(wid) == wid]
        if not turns:
            return False
        workflow_id = turns[0]
        await asyncio.to_thread(self.store.request_cancel, session_id, workflow_id)
        self.runtime.cancel_local(workflow_id)
        # a turn, or a task of it, parked on a person or an event wakes on this and stops
        for waiting in [wid for wid in active if turn_of(wid) == workflow_id]:
            await self.engine.send_input(waiting, CancelMail(), key=f"cancel:{waiting}")
        return True

    async def send_event(
        self,
        session_id: str,
        task_id: str,
        name: str,
        data: object,
        *,
        principal: Principal = OPERATOR,
    ) -> None:
        """Deliver the event ``name`` to a task of this session (a workflow tool waiting in
        ``wait_for_event``, now or later)."""
        await self.require_active(session_id, principal=principal)
        if turn_of(task_id) == task_id or not task_id.startswith(f"{session_id}:"):
            raise TaskNotWaiting(
                f"{task_id} is not a task of session {session_id}", task_id=task_id
            )
        if not await task_takes_events(self.engine, session_id, task_id):
            raise TaskNotWaiting(f"task {task_id} is not running", task_id=task_id)
        # DBOS stores the message: no known secret in it, as in a step's record
        plain = msgspec.json.decode(redact(msgspec.json.encode(data).decode()))
        await self.engine.send_input(
            task_id, EventMail(name=name, data=plain), key=f"event:{secrets.token_hex(12)}"
        )

    async def reset(self, session_id: str, *, principal: Principal = OPERATOR) -> None:
        """Cancel the running turn, then clear history and state once it has stopped."""
        await self.require_active(session_id, principal=principal)
        await self.cancel(session_id)
        await self._claim_place(
            session_id, "reset", lambda turn: reset_workflow_id(session_id, turn)
        )

    async def fork(
        self, session_id: str, *, key: str | None = None, principal: Principal = OPERATOR
    ) -> Accepted:
        """A new session owned by ``principal`` that starts where ``session_id`` stands
        between its turns: its history, state and workspace copied (``forking.py``).
        ``principal`` must be allowed to see the source; ``key`` is the request's
        ``Idempotency-Key``."""
        forked = await asyncio.to_thread(
            fork_session,
            self.store,
            session_id,
            fork_id=new_session_id(),
            principal=principal,
            key=key,
        )
        await self._watch_idle(forked.session_id)
        return Accepted(
            session_id=forked.session_id,
            turn_id=None,
            status="forked",
            replayed=forked.replayed,
            forked_from=session_id,
        )

    async def compact(self, session_id: str, *, principal: Principal = OPERATOR) -> None:
        """Queue a compaction behind the session's turns (``sessions.compact_workflow``)."""
        await self.require_active(session_id, principal=principal)
        await self._claim_place(
            session_id, "compact", lambda turn: compact_workflow_id(session_id, turn)
        )

    # --- the event log -----------------------------------------------------------------

    async def events(
        self,
        session_id: str,
        start: int,
        *,
        follow: bool,
        fast: bool = False,
        principal: Principal = OPERATOR,
    ) -> AsyncIterator[str]:
        """The log from ``start``; ``fast``: a database fault ends it rather than being
        waited out (``EventLog.read``)."""
        await self.get(session_id, principal=principal)
        return self.log.read(session_id, start, follow=follow, fast=fast)

    async def event_batches(
        self, session_id: str, start: int, *, follow: bool, principal: Principal
    ) -> AsyncIterator[list[str]]:
        """``events``, those ready together in one list (``EventLog.batches``), for an HTTP
        stream: a database fault ends it (``fast``), and its client follows it again."""
        await self.get(session_id, principal=principal)
        return self.log.batches(session_id, start, follow=follow, fast=True)


def _fingerprinted(response: InputResponse) -> dict[str, Any]:
    """An answer as an idempotency key's fingerprint reads it: every field, ``values`` even
    when unset, as eve encoded answers before request bodies left defaults out, so a retry
    across an upgrade still replays."""
    return {
        "requestId": response.request_id,
        "optionId": response.option_id,
        "values": response.values,
    }


def _redacted(part: UserPart) -> UserPart:
    """Text, and a plain-text document's text, redacted; an image's bytes are left alone."""
    if isinstance(part, TextPart):
        return TextPart(text=redact(part.text))
    if isinstance(part, DocumentPart) and part.media_type == "text/plain" and part.data:
        try:
            text = part.data.decode("utf-8")
        except UnicodeDecodeError:
            return part
        return msgspec.structs.replace(part, data=redact(text).encode("utf-8"))
    return part
