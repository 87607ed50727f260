"""The turn workflow: one DBOS workflow per turn, queued per session so turns run in order.

A turn loads the session's checkpoint (history, state, ``once`` approvals), runs the
agent loop with durable steps, saves the new checkpoint and reports the session waiting.
A failed turn leaves the checkpoint as it was: the message that failed is not half-added.

A turn's input is its user message's parts as JSON data and the principal who sent it
(``TurnInput``); a turn queued by an eve from before principals has the parts alone (the
operator's), and one from before content parts the message's text, and both still run.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import functools
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
from dbos import DBOS

from eve._cancellation import CancelSignal
from eve.auth.principal import OPERATOR, Principal
from eve.connections import authorization
from eve.context.active import EveContext, use_context
from eve.events import SessionCompletedData, SessionResetData, SessionWaitingData
from eve.execution.environment import TurnEnvironment
from eve.execution.events import EventEmitter
from eve.execution.loop import run_agent
from eve.execution.result import RunResult
from eve.execution.setup import AgentSetup
from eve.messages import UserMessage, user_message
from eve.sessions.accepted import Place, PlaceEnds, PlaceStarts
from eve.sessions.checkpoint import SessionCheckpoint
from eve.sessions.checkpoint_carry import CarriedCheckpoints
from eve.sessions.checkpoint_steps import Loaded, load_checkpoint, save_checkpoint, saving
from eve.sessions.compute_gate import ComputeGate
from eve.sessions.database_errors import in_workflow_body, storage_failure
from eve.sessions.db_retry import patient
from eve.sessions.durable_steps import DurableRecorder, legacy_steps
from eve.sessions.event_log import EventLog
from eve.sessions.form_requests import DurableForms
from eve.sessions.input_requests import DurableApproval, InputDesk
from eve.sessions.limit_desk import DurableLimits
from eve.sessions.mcp_calls import DurableSentCalls
from eve.sessions.store import CheckpointSave, SessionStore
from eve.sessions.tasks import DurableTasks, install_host, turn_of
from eve.sessions.turn_events import TurnEvents
from eve.sessions.workspaces import WorkspaceKeeper, keeper_for

log = logging.getLogger("eve.sessions")

TURN_WORKFLOW = "eve.turn"
RESET_WORKFLOW = "eve.reset"


#: a turn's input as DBOS stores it: ``{"parts": [...], "principal": {...}}`` (the user
#: message's parts as plain data, bytes in base64, and who sent it); for a turn queued
#: before principals, the parts alone; before messages had parts, the message's text
TurnInput = str | list[dict[str, Any]] | dict[str, Any]


def turn_workflow_id(session_id: str, turn: int) -> str:
    return f"{session_id}:turn-{turn}"


def turn_id_of(workflow_id: str) -> str | None:
    """The ``turn_N`` a turn workflow (or one of its tasks) runs; None for other workflows."""
    _, _, name = turn_of(workflow_id).rpartition(":")
    kind, _, number = name.partition("-")
    return f"turn_{number}" if kind == "turn" and number.isdigit() else None


def reset_workflow_id(session_id: str, turn: int) -> str:
    return f"{session_id}:reset-{turn}"


def turn_input(message: UserMessage) -> list[dict[str, Any]]:
    """``message`` as a turn's input. Plain data, not the Struct: DBOS pickles inputs, and a
    pickled Struct would stop loading the day its class moves."""
    data: list[dict[str, Any]] = msgspec.to_builtins(message.parts)
    return data


def sent_input(message: UserMessage, principal: Principal) -> dict[str, Any]:
    """``message`` as the input of a turn ``principal`` sent."""
    return {"parts": turn_input(message), "principal": msgspec.to_builtins(principal)}


def message_of(raw: TurnInput) -> UserMessage:
    """The user message of a turn's input, in any of its forms."""
    if isinstance(raw, str):
        return user_message(raw)
    parts = raw["parts"] if isinstance(raw, dict) else raw
    # converted as the message, whose type msgspec keeps compiled on its class: a
    # ``list[UserPart]`` is compiled again at every call (10 against 1.7 µs a turn)
    return msgspec.convert({"parts": parts}, type=UserMessage)


def sender_of(raw: TurnInput) -> Principal:
    """Who sent a turn's message: the operator, for a turn queued before principals."""
    if isinstance(raw, dict):
        return msgspec.convert(raw["principal"], type=Principal)
    return OPERATOR


@dataclass(kw_only=True)
class TurnRuntime:
    """What turn workflows in this process run with; set before DBOS launches."""

    setup: AgentSetup
    store: SessionStore
    log: EventLog
    #: this worker's compute permits (``--concurrency``)
    gate: ComputeGate
    cancel_poll_seconds: float = 0.25
    running: dict[str, CancelSignal] = field(default_factory=dict)
    #: the workflows whose body runs in this process now (parked ones included)
    inflight: set[str] = field(default_factory=set)
    #: a body ended with an error: DBOS may not have recorded it (the storage failed), and
    #: the engine looks for workflows of this worker left pending with nothing running them
    orphans_possible: bool = False
    #: starts a session's next place once the body before it is done, DBOS's record of
    #: its end included (the engine's ``start_soon``)
    start_next: Callable[[Place], None] = lambda _: None
    #: the checkpoint each session's last turn here saved, for its next turn here
    carried: CarriedCheckpoints = field(default_factory=CarriedCheckpoints)

    @contextlib.asynccontextmanager
    async def tracked(self) -> AsyncIterator[None]:
        """Around a workflow body: it is in ``inflight`` while it runs."""
        workflow_id = DBOS.workflow_id or ""
        self.inflight.add(workflow_id)
        try:
            with patient(), in_workflow_body():
                yield
        except BaseException:
            self.orphans_possible = True
            raise
        finally:
            self.inflight.discard(workflow_id)

    async def workspace_of(self, session_id: str) -> WorkspaceKeeper | None:
        """The session's sandbox workspace, opened as its last step left it; None when the
        agent declares no sandbox."""
        keeper = keeper_for(self.store, self.setup.workspace, self.setup.agent.node_id, session_id)
        if keeper is not None:
            await asyncio.to_thread(keeper.open)
        return keeper

    async def settle(self, session_id: str) -> None:
        """The running workflow's place is done: its outcome is in the log (accepted.py).
        The session's next place, if one waits, starts once this body's task is done (a
        crash first leaves it to the sweep)."""
        place = await asyncio.to_thread(self.store.run, self.ending(session_id))
        self.start_after(place)

    def ending(self, session_id: str, save: CheckpointSave | None = None) -> PlaceEnds:
        """``settle``'s write after ``save`` (the turn's checkpoint), for the transaction of
        the body's last events (its outcome in the log, its checkpoint and its place done,
        in one commit); ``start_after`` with its result."""
        return PlaceEnds(session_id=session_id, workflow_id=DBOS.workflow_id or "", save=save)

    def start_after(self, place: Place | None) -> None:
        """Start ``place`` (the session's next) once this body's task is done, DBOS's record
        of its end included."""
        task = asyncio.current_task()
        if place is not None and task is not None:
            start = self.start_next
            # not in the body's context: DBOS would take the start for a child workflow
            task.add_done_callback(lambda _: start(place), context=contextvars.Context())

    async def events_of(
        self,
        session_id: str,
        workflow_id: str,
        *,
        loads: bool = False,
        starts_place: bool = False,
    ) -> TurnEvents:
        """The sink of a workflow body writing into ``session_id``'s log, which skips what an
        earlier run of the same body already wrote; its progress holds the body's step
        records (and with ``loads``, the checkpoint it starts from), whether its turn was
        asked to cancel, and the log's next index (its writer starts there), read at once.
        ``starts_place``: the body runs a place (a turn, a reset, a compaction), which it
        marks started in the same transaction (``accepted.mark_started``)."""
        running = DBOS.workflow_id or workflow_id
        read = functools.partial(
            self.store.turn_progress,
            workflow_id,
            records_of=running,
            checkpoint_of=session_id if loads else None,
            log_of=session_id,
            cancel_of=turn_of(running),
            also=PlaceStarts(running) if starts_place else None,
        )
        progress = await asyncio.to_thread(read)
        if await legacy_steps(progress, running):
            progress = dataclasses.replace(progress, legacy_steps=True)
        writer = self.log.writer(session_id)
        if writer.next_index is None:
            writer.next_index = progress.next_index
        return TurnEvents(writer, workflow_id=workflow_id, progress=progress)

    @contextlib.asynccontextmanager
    async def signal_for(
        self, workflow_id: str, *, asked: bool | None = None
    ) -> AsyncIterator[CancelSignal]:
        """The cancel signal of a turn or task running here while the block runs; set
        already when its turn was cancelled before it (re)started. ``asked``: whether it
        was, as read with the body's progress (``events_of``); None: read it now."""
        signal = CancelSignal()
        self.running[workflow_id] = signal
        try:
            if asked is None:
                asked = bool(
                    await asyncio.to_thread(self.store.cancel_requested, [turn_of(workflow_id)])
                )
            if asked:
                signal.cancel("cancelled")
            yield signal
        finally:
            self.running.pop(workflow_id, None)

    async def run_turn(self, session_id: str, turn: int, given: TurnInput) -> str:
        workflow_id = DBOS.workflow_id or turn_workflow_id(session_id, turn)
        # a rerun (accepted_sweep.py) writes under its turn's id: what the ended run wrote
        # is skipped, as for a replay
        log_id = turn_workflow_id(session_id, turn)
        events = await self.events_of(session_id, log_id, loads=True, starts_place=True)
        if events.progress.finished:
            await self.settle(session_id)
            return "recovered"  # the log tells its end already; do not run it twice
        try:
            return await self._run_turn(session_id, turn, given, workflow_id, events)
        except BaseException:
            # what did not reach the log is emitted again by the replay or rerun
            self.log.discard(session_id, log_id)
            raise

    async def _run_turn(
        self, session_id: str, turn: int, given: TurnInput, workflow_id: str, events: TurnEvents
    ) -> str:
        turn_id = f"turn_{turn}"
        emitter = EventEmitter(events, session_id=session_id, hooks=self.setup.hooks)
        loaded = await load_checkpoint(
            self.store, session_id, events.progress, carried=self.carried
        )
        checkpoint = loaded.checkpoint
        context = EveContext(session_id=session_id, principal=sender_of(given))
        context.restore(checkpoint.state)
        workspace = await self.workspace_of(session_id)
        try:
            async with self.signal_for(
                workflow_id, asked=events.progress.cancel_requested
            ) as signal:
                desk = InputDesk(
                    store=self.store,
                    session_id=session_id,
                    workflow_id=workflow_id,
                    turn_id=turn_id,
                    emitter=emitter,
                    events=events,
                    principal=context.principal,
                )
                env = TurnEnvironment(
                    session_id=session_id,
                    turn_id=turn_id,
                    signal=signal,
                    emitter=emitter,
                    context=context,
                    recorder=DurableRecorder(events, context, gate=self.gate, workspace=workspace),
                    tasks=DurableTasks(root_session_id=session_id, workflow_id=workflow_id),
                    approve=DurableApproval(desk, signal),
                    approved_once=frozenset(checkpoint.approved_once),
                    spent_before=checkpoint.spend,
                    ask_limit=DurableLimits(desk, signal),
                    raised_limits=checkpoint.raised_limits,
                    forms=DurableForms(desk=desk, signal=signal),
                    sent_calls=DurableSentCalls(desk=desk),
                )
                message = message_of(given)
                # MCP connections keep their OAuth grants in the session database
                with authorization.lent(store=lambda: self.store):
                    result = await run_agent(
                        self.setup, message, history=checkpoint.messages, env=env
                    )
        except Exception as error:
            # run_agent already published turn.failed; the session takes the next message.
            # If the storage failed, writing that may fail too: the error leaves the body
            # unrecorded, and the engine resumes it once writes succeed (engine.py)
            failed = storage_failure(error)
            log.warning("turn %s failed: %s", workflow_id, failed or type(error).__name__)
            events.release()  # no checkpoint to wait for: the turn failed
            await emitter.emit(SessionWaitingData(turn_id=turn_id))
            # its place is done with its last event, or after it (``TurnEvents.ending``)
            ending = events.ending(self.ending(session_id))
            await events.flush()
            self.start_after(await ending)
            return "failed"
        ended, save, after = await self._finish(session_id, loaded, context, result)
        # hooks of session.completed read the state the session ended with
        with use_context(context):
            if ended:
                await emitter.emit(SessionCompletedData(turn_id=turn_id, reason=ended))
            else:
                await emitter.emit(SessionWaitingData(turn_id=turn_id))
        # the turn's end, held until now (the last event waits behind it), is released with
        # its checkpoint and its place's end, in one transaction: no reader sees the turn
        # end uncounted, and its place is not done before its outcome is in the log
        ending = events.ending(self.ending(session_id, save))
        events.release()
        await events.flush()
        self.log.forget(session_id)
        place = await ending
        if save is not None:
            # committed: the session's next turn here starts from it as it is
            self.carried.keep(save, after)
        self.start_after(place)
        return result.stop_reason

    async def _finish(
        self,
        session_id: str,
        loaded: Loaded,
        context: EveContext,
        result: RunResult,
    ) -> tuple[str | None, CheckpointSave | None, SessionCheckpoint]:
        """The checkpoint, built from the turn's final state: its save, for the transaction
        of the turn's last events (``run_turn``), or saved now (a save that must be a step,
        or a session that ends, whose end is recorded after its checkpoint); the reason the
        session ends now: the limit a person chose to end it on (``execution.limits``); and
        the checkpoint itself."""
        assert result.state is not None, "run_agent returns the turn's final state"
        after = SessionCheckpoint(
            messages=result.messages,
            state=context.snapshot(),
            approved_once=sorted(result.state.approved_once),
            turns=loaded.checkpoint.turns + 1,
            spend=result.session,
            raised_limits=dict(result.state.raised_limits),
        )
        reason = result.ended_by
        if reason is None and (save := saving(session_id, after, after=loaded)) is not None:
            return None, save, after
        await save_checkpoint(self.store, session_id, after, after=loaded)
        if reason is not None:
            await DBOS.run_step_async(
                {"name": "session.end"},
                asyncio.to_thread,
                self.store.end_session,
                session_id,
                reason,
            )
        return reason, None, after

    async def reset(self, session_id: str) -> str:
        workflow_id = DBOS.workflow_id or f"{session_id}:reset"
        events = await self.events_of(session_id, workflow_id, starts_place=True)
        if events.progress.finished:
            return "reset"
        await save_checkpoint(self.store, session_id, None, after=None, step="checkpoint.clear")
        keeper = keeper_for(self.store, self.setup.workspace, self.setup.agent.node_id, session_id)
        if keeper is not None:
            await asyncio.to_thread(keeper.reset)
        await EventEmitter(events, session_id=session_id).emit(SessionResetData())
        await events.flush()
        self.log.forget(session_id)
        return "reset"

    def cancel_local(self, workflow_id: str) -> bool:
        """Cancel the turn ``workflow_id`` if it runs here, and its tasks that run here."""
        found = False
        for running, signal in list(self.running.items()):
            if turn_of(running) == workflow_id:
                signal.cancel("cancelled")
                found = True
        return found

    async def watch_cancellations(self) -> None:
        """Cancel turns running here that any worker was asked to cancel."""
        while True:
            await asyncio.sleep(self.cancel_poll_seconds)
            ids = list(self.running)
            if not ids:
                continue
            turns = sorted({turn_of(workflow_id) for workflow_id in ids})
            with contextlib.suppress(Exception):
                for workflow_id in await asyncio.to_thread(self.store.cancel_requested, turns):
                    self.cancel_local(workflow_id)


_runtime: TurnRuntime | None = None


def install_runtime(runtime: TurnRuntime | None) -> None:
    global _runtime
    _runtime = runtime
    install_host(runtime)


def current_runtime() -> TurnRuntime:
    """The runtime workflow bodies of this process run with (``install_runtime``)."""
    return _current()


def _current() -> TurnRuntime:
    if _runtime is None:
        raise RuntimeError("eve's turn runtime is not installed in this process")
    return _runtime


@DBOS.workflow(name=TURN_WORKFLOW)
async def turn_workflow(session_id: str, turn: int, message: TurnInput) -> str:
    async with _current().tracked():
        # its place is done with its last events (``run_turn``)
        return await _current().run_turn(session_id, turn, message)


@DBOS.workflow(name=RESET_WORKFLOW)
async def reset_workflow(session_id: str) -> str:
    async with _current().tracked():
        outcome = await _current().reset(session_id)
        await _current().settle(session_id)
        return outcome
