"""The loop's step seam made durable: each record of a turn is one row of eve's own.

``DurableRecorder`` runs each record of a turn (a part of an agent step: the model response
and its tool calls; one call of a concurrent batch; a compaction; an MCP listing) once and
stores its value *and the session state after it* in ``eve_step_records``, one INSERT that
rides in the transaction of the step's events (``SessionWriter.attach``): the record commits
with its events or after them, never before, and a step whose events reached the log without
its record runs again as its next attempt, as one that died mid-way does. A (re)started
body reads its workflow's records once, with its progress in the log
(``store.turn_progress``); a step found there is not run again: the state is restored from
its record, and neither the model nor the tools run twice. (A person is asked
between parts: ``sessions.input_requests``.) The calls of a batch are steps that run at
once; each one's events are its own (``TurnEvents.step``).

The turn does not wait for a record to commit before it goes on (``TurnEvents.defer``):
what it emits next (the step's ``step.completed``, the next ``step.started``) rides in the
same transaction, one commit a step where it took two (a thread hop, a commit and a chunk
to each follower fewer). It waits before anything the record must come first for: the next
record's work (its model call, its tools), a person asked or a task started (the driver
asks ``settled``), and the body's end (``TurnEvents.flush``). A crash before the commit
runs the step again, as one before the record was made does.

Two runs of one workflow at once (a worker taken for dead that still runs) each go on
from their own value: the record stored first stays, the one a replay reads, and the run
whose record was not stored says so in the log (as the last to save its checkpoint, its
history wins: each run's is a whole one).

Why not one DBOS step per record, as before: each cost DBOS two reads and two writes in
its own database, a third of a turn's CPU, for what one INSERT keeps as well.

A workflow an older eve started recorded its steps as DBOS steps, and DBOS numbers a
workflow's operations in order: such a body, found when it restarts (``legacy_steps``),
goes on as it began, each record a DBOS step, so what it recorded is replayed and the
operations after it keep their numbers. One that had logged nothing yet when it stopped
(killed in the few milliseconds before its first event was written) is not recognised:
it starts over, its records unread.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any, TypeVar

import msgspec
from dbos import DBOS
from dbos._dbos import _get_dbos_instance

from eve._redact import redact
from eve._step_attempts import StepAttempt, fresh_step
from eve.context.active import EveContext
from eve.errors import StepRecordCorrupt
from eve.execution.recording import Produce, RecordKind
from eve.sessions.checkpoint import STEP_RECORD_VERSION, StepCheckpoint
from eve.sessions.compute_gate import ComputeGate
from eve.sessions.database_errors import storage_failure
from eve.sessions.step_records import NewRecord
from eve.sessions.store import TurnProgress
from eve.sessions.turn_events import TurnEvents
from eve.sessions.workspaces import WorkspaceKeeper

T = TypeVar("T")
log = logging.getLogger("eve.sessions")
_records = msgspec.json.Decoder(StepCheckpoint)


class _Made(msgspec.Struct):
    """What a step's record made just now is read back for: its value and state as stored
    (redacted); its events are the ones just emitted, so decoding them is skipped."""

    value: msgspec.Raw
    state: dict[str, Any]


_made = msgspec.json.Decoder(_Made)
#: the DBOS step an older eve's turn began with (it recorded the checkpoint's version)
LOAD_STEP = "checkpoint.load"


class DurableRecorder:
    """A ``StepRecorder`` whose every record is one row of ``eve_step_records``, with the
    session state after it and the events it emitted (and, with a sandbox, the workspace's
    state); for a workflow an older eve started, one DBOS step (``legacy_steps``)."""

    def __init__(
        self,
        events: TurnEvents,
        context: EveContext,
        *,
        gate: ComputeGate,
        workspace: WorkspaceKeeper | None = None,
    ) -> None:
        self.events = events
        self.context = context
        self.gate = gate
        #: the session's sandbox workspace, checkpointed with each step (None: no sandbox)
        self.workspace = workspace

    async def _once(self, key: str, run: Produce[str]) -> tuple[str | bytes, bool]:
        """The record of ``key``: as recorded, or made now by ``run`` and stored; whether
        it was made now."""
        progress = self.events.progress
        if progress.legacy_steps:
            ran = False

            async def tracked() -> bytes:
                nonlocal ran
                ran = True
                return (await run()).encode()

            recorded: bytes = await DBOS.run_step_async({"name": key}, tracked)
            return recorded, ran
        if (found := progress.records.get(key)) is not None:
            return found, False
        made = await run()
        workflow_id = DBOS.workflow_id or ""
        # in the transaction of the step's events (or one after it), not one of its own,
        # and not waited for here (the module docstring)
        done = self.events.defer(NewRecord(workflow_id=workflow_id, key=key, record=made))
        done.add_done_callback(functools.partial(_kept, progress, workflow_id, key, made))
        progress.records[key] = made
        return made, True

    async def settled(self) -> None:
        """Wait until the records made so far are in the log: before what a record must
        precede other than the next record (which waits itself), a person asked, a task
        started (``eve.execution.recording.records_durable``)."""
        try:
            await self.events.settled()
        except Exception as error:
            if (failed := storage_failure(error)) is not None:
                raise failed from None
            raise

    async def record(self, key: str, produce: Produce[T], kind: RecordKind[T]) -> T:
        async def run() -> str:
            # the permit covers the computing only: a replayed step takes none
            async with self.gate.held(), self.events.step(key) as attempt:
                # an earlier attempt that died before its record leaves writes (a memory
                # saved) that this attempt would otherwise repeat: undone first
                fresh = StepAttempt(
                    step=f"{DBOS.workflow_id}/{key}",
                    session_id=self.context.session_id,
                    principal=self.context.principal,
                )
                async with fresh_step(fresh):
                    value = await produce()
                step_events = self.events.step_events
            keeper = self.workspace
            record = StepCheckpoint(
                value=msgspec.Raw(msgspec.json.encode(value)),
                state=self.context.snapshot(),
                version=STEP_RECORD_VERSION,
                attempt=attempt,
                events=step_events,
                workspace=None
                if keeper is None
                else await asyncio.to_thread(keeper.checkpoint, DBOS.workflow_id),
            )
            # stored as the event log is: no known secret in it (a model that echoes a key,
            # a tool's progress message), so a replay sees [redacted] where a key was
            return redact(msgspec.json.encode(record).decode())

        try:
            # the records before this one commit before its work runs
            await self.events.settled()
            recorded, ran = await self._once(key, run)
        except Exception as error:
            # a write the storage refused ends the turn with its name, not the driver's
            # message (which quotes the SQL and its parameters)
            if (failed := storage_failure(error)) is not None:
                raise failed from None
            raise
        if ran:
            # read back all the same: the turn goes on with the value as a replay sees it
            value, state = _read_made(recorded, kind.decoder, step=key)
            self.context.restore(state)
            return value
        checkpoint, value = decode_step_record(
            recorded, kind.decoder, workflow_id=DBOS.workflow_id, step=key
        )
        self.events.replayed(key, checkpoint.attempt, checkpoint.events)
        if self.workspace is not None and checkpoint.workspace is not None:
            # as the step left it: what a crashed attempt wrote after it is undone
            await asyncio.to_thread(self.workspace.restore, checkpoint.workspace)
        self.context.restore(checkpoint.state)
        return value


def _kept(progress: TurnProgress, workflow_id: str, key: str, made: str, done: Any) -> None:
    """A deferred record committed: the record stored, which is another's when another run
    of the workflow recorded the step first (then this run goes on from its own value)."""
    if done.cancelled():
        return  # dropped with the events of a body that failed
    stored: str = done.result()
    progress.records[key] = stored
    if stored != made:
        log.warning(
            "step %s of %s was recorded first by another run of it; this run goes on from "
            "its own result, which a replay does not see",
            key,
            workflow_id,
        )


def _read_made(
    recorded: bytes | str, decoder: msgspec.json.Decoder[T], *, step: str
) -> tuple[T, dict[str, Any]]:
    try:
        made = _made.decode(recorded)
        return decoder.decode(made.value), made.state
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise _corrupt(f"cannot be read ({error})", DBOS.workflow_id, step) from None


async def legacy_steps(progress: TurnProgress, workflow_id: str) -> bool:
    """Whether the body of ``workflow_id`` (its progress read) is one an older eve started,
    whose records are DBOS steps: its first DBOS operation is the load step or a step
    record, where this eve's never is. DBOS is asked only when the body restarts (the log
    holds its events) and eve's table has no record of it, never on a turn's first run."""
    if progress.records or not progress.restarted:
        return False

    def first_step() -> list[Any]:
        # DBOS's own table, read around DBOS.list_workflow_steps: called in a workflow,
        # that would be an operation of the workflow itself (pinned by ``dbos<4``)
        steps = _get_dbos_instance()._sys_db.list_workflow_steps(workflow_id, limit=1)
        return [(step["function_name"], step["output"]) for step in steps]

    for name, output in await asyncio.to_thread(first_step):
        if name == LOAD_STEP:
            return True
        if isinstance(output, bytes):
            try:
                _records.decode(output)
            except (msgspec.DecodeError, msgspec.ValidationError):
                return False
            return True
    return False


def decode_step_record(
    recorded: bytes | str, decoder: msgspec.json.Decoder[T], *, workflow_id: str | None, step: str
) -> tuple[StepCheckpoint, T]:
    """A step's record and the value it holds (a part, a compaction); ``StepRecordCorrupt``
    naming the turn and the step when either does not decode (a malformed message part, a
    record edited by hand) or the record is of another format (an eve from before the turn
    was a state machine: its parts do not say what the loop now needs)."""
    try:
        checkpoint = _records.decode(recorded)
        value = decoder.decode(checkpoint.value)
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise _corrupt(f"cannot be read ({error})", workflow_id, step) from None
    if checkpoint.version != STEP_RECORD_VERSION:
        written = (
            f"was written in format {checkpoint.version}; this eve reads {STEP_RECORD_VERSION}"
        )
        raise _corrupt(written, workflow_id, step)
    return checkpoint, value


def _corrupt(problem: str, workflow_id: str | None, step: str) -> StepRecordCorrupt:
    return StepRecordCorrupt(
        f"the record of step {step!r} of {workflow_id or 'a turn'} {problem}; the turn "
        "cannot be replayed from it: reset the session (POST …/reset) or start a new one",
        workflow_id=workflow_id or "",
        step=step,
    )
