"""A turn as the ``mcp`` channel reports it: the session's event log folded into a
``TurnView``, and the log followed until the turn settles or the caller's wait runs out.

The log is the only state: every call reads it from where the turn starts (the store's
index finds that), so a caller that lost its connection, or a server that restarted,
answers the same thing on the next call, at the cost of the turn, not the history. Events
belong to the root turn last started before them (a session runs one turn at a time, and a
subagent's events sit inside its caller's turn), which is how a subagent's approval request
is answered through its caller's turn.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import msgspec

from eve.channels.sessions import ChannelSessions
from eve.errors import InvalidBody, TurnNotFound
from eve.events import (
    ActionResult,
    ActionsRequested,
    InputRequest,
    InputRequested,
    InputResolved,
    MessageCompleted,
    ResultStatus,
    SessionCompleted,
    SessionEvent,
    TurnCancelled,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
    TurnWaiting,
    decode_event,
)

#: ``idle``: no turn has started in the session (its first may still be queued: the log tells
#: only what started); ``queued``: accepted, not started (behind the running turn);
#: ``waiting``: parked until a person answers its ``requests``
TurnStatus = Literal["idle", "queued", "running", "waiting", "completed", "failed", "cancelled"]
#: what a caller reads of a tool's result: enough to see what happened, not a whole file
CALL_OUTPUT_CHARS = 1000

_TURN_ID = re.compile(r"turn_(\d+)")


class CallView(msgspec.Struct, frozen=True, kw_only=True):
    """A tool call the turn made, and how it ended."""

    call_id: str
    name: str
    status: ResultStatus
    #: the result's text, cut at ``CALL_OUTPUT_CHARS``
    output: str


class NextCall(msgspec.Struct, frozen=True, kw_only=True):
    """What to call next, for a caller (often a model) that follows the answer."""

    tool: str
    arguments: dict[str, Any]
    why: str


class TurnView(msgspec.Struct, frozen=True, kw_only=True):
    """What every tool of the channel answers: one turn of a session, as the log tells it."""

    session_id: str
    #: ``turn_<n>``; None while the session has no turn
    turn_id: str | None
    status: TurnStatus
    #: the turn's last text from the agent (its final answer once ``completed``)
    answer: str | None = None
    #: the typed final answer, for an agent with ``output_schema``
    output: Any = None
    #: why the turn failed (``ErrorName: message``)
    error: str | None = None
    #: what a person must answer before the turn goes on (``agent_update`` ``answers``)
    requests: list[InputRequest] = []
    #: the tool calls the turn made so far, in order
    calls: list[CallView] = []
    #: why the session ended, once it takes no more messages
    session_ended: str | None = None
    #: ``agent_cancel`` only: whether a running turn was asked to stop
    cancelled: bool | None = None
    next: NextCall | None = None


def turn_number(turn_id: str) -> int:
    """``turn_3`` → 3; anything else is refused as a bad argument."""
    found = _TURN_ID.fullmatch(turn_id)
    if found is None:
        raise InvalidBody(f"turn_id must look like turn_0, turn_1, …; got {turn_id!r}")
    return int(found.group(1))


@dataclass(kw_only=True)
class TurnFold:
    """The log read so far, as it bears on one turn: ``turn_id``, or the session's latest
    turn when None (fixed by ``fix_target`` once the log's backlog is read)."""

    session_id: str
    turn_id: str | None = None
    #: requests this call just answered: the turn is running again, whatever the log says yet
    answered: frozenset[str] = frozenset()
    #: this call asked the turn to stop: a parked turn has not settled until it ends
    stopping: bool = False
    next_index: int = 0
    status: TurnStatus = "queued"
    answer: str | None = None
    output: Any = None
    error: str | None = None
    pending: dict[str, InputRequest] = field(default_factory=dict)
    calls: dict[str, CallView] = field(default_factory=dict)
    ended: str | None = None
    #: the root turn the next event belongs to, and the highest turn number seen
    current: str | None = None
    latest: int = -1

    def add(self, event: SessionEvent) -> None:
        self.next_index = event.meta.index + 1
        root = event.data.parent is None
        if root and isinstance(event, SessionCompleted):
            self.ended = event.data.reason
        if root and isinstance(event, TurnStarted) and event.data.turn_id is not None:
            self.current = event.data.turn_id
            self.latest = max(self.latest, turn_number(self.current))
            if self.turn_id is None:
                self._reset()  # following the latest turn: a new one replaces the last
        if self.current is not None and self.turn_id in (None, self.current):
            self._fold(event, root=root)  # an event of the turn this fold reads

    def _reset(self) -> None:
        self.status, self.answer, self.output, self.error = "queued", None, None, None
        self.pending, self.calls = {}, {}

    def _fold(self, event: SessionEvent, *, root: bool) -> None:
        match event:
            case InputRequested():
                self.pending.update({r.request_id: r for r in event.data.requests})
            case InputResolved():
                self.pending.pop(event.data.request_id, None)
                if self.status == "waiting" and not self.pending:
                    self.status = "running"
            case _ if root:
                # a subagent's text and calls are its own; its requests are the turn's
                self._fold_root(event)

    def _fold_root(self, event: SessionEvent) -> None:
        match event:
            case TurnStarted():
                self.status = "running"
            case MessageCompleted() if event.data.message:
                self.answer = event.data.message
            case ActionResult():
                data = event.data
                output = data.output[:CALL_OUTPUT_CHARS]
                self.calls[data.call_id] = CallView(
                    call_id=data.call_id, name=data.name, status=data.status, output=output
                )
            case TurnWaiting():
                self.status = "waiting"
            case TurnCompleted():
                self.status, self.output = "completed", event.data.output
            case TurnFailed():
                self.status, self.error = "failed", event.data.error
            case TurnCancelled():
                self.status = "cancelled"
            case _:
                pass

    def fix_target(self) -> None:
        """Once the backlog is read: follow the turn it ended on, or check ``turn_id``."""
        if self.turn_id is None:
            self.turn_id = self.current
            if self.current is None:
                self.status = "idle"
        elif turn_number(self.turn_id) > self.latest:
            return  # accepted, not started yet: behind the running turn
        elif self.status == "queued":
            # an earlier place that is no turn (a reset, a compaction) or never was one
            raise TurnNotFound(
                f"session {self.session_id} has no turn {self.turn_id}",
                session_id=self.session_id,
                turn_id=self.turn_id,
            )

    @property
    def open_requests(self) -> list[InputRequest]:
        return [r for rid, r in self.pending.items() if rid not in self.answered]

    @property
    def settled(self) -> bool:
        """Nothing will change until someone acts: the turn ended, or waits on a person."""
        if self.ended is not None:
            return True
        match self.status:
            case "idle" | "completed" | "failed" | "cancelled":
                return True
            case "waiting":
                return not self.stopping and bool(self.open_requests)
            case "queued" | "running":
                return False

    def view(self, *, wait_seconds: float) -> TurnView:
        status = self.status
        if status == "waiting" and not self.open_requests:
            status = "running"  # its requests were answered: it goes on
        return TurnView(
            session_id=self.session_id,
            turn_id=self.turn_id,
            status=status,
            answer=self.answer,
            output=self.output,
            error=self.error,
            requests=self.open_requests,
            calls=list(self.calls.values()),
            session_ended=self.ended,
            next=self._next(status, wait_seconds),
        )

    def _next(self, status: TurnStatus, wait_seconds: float) -> NextCall | None:
        session = {"session_id": self.session_id}
        if self.ended is not None:
            return None
        match status:
            case "queued" | "running":
                return NextCall(
                    tool="agent_get",
                    arguments={**session, "turn_id": self.turn_id, "wait": wait_seconds},
                    why="the turn is still running: read it again, waiting for it to settle",
                )
            case "waiting":
                return NextCall(
                    tool="agent_update",
                    arguments=session,
                    why="the turn waits for a person: answer each of `requests` with "
                    "answers=[{request_id, option_id}], option_id one of the request's options",
                )
            case "idle" | "completed" | "failed" | "cancelled":
                return NextCall(
                    tool="agent_update",
                    arguments=session,
                    why="the session takes the next message: send one with message=...",
                )


#: ``report(index, message)``: a progress notification for the event at ``index``
Report = Callable[[int, str], Awaitable[None]]


async def watch(
    sessions: ChannelSessions, fold: TurnFold, *, wait: float, report: Report
) -> TurnFold:
    """Read the log into ``fold``, then follow it for up to ``wait`` seconds until the turn
    settles, reporting each event worth telling, those read before the wait included."""
    fold.next_index = await _start(sessions, fold)
    backlog = await sessions.events(fold.session_id, fold.next_index, follow=False)
    told: list[tuple[int, str]] = []
    async for line in backlog:
        event = decode_event(line)
        fold.add(event)
        if (said := describe(event)) is not None:
            told.append((event.meta.index, said))
    fold.fix_target()
    if fold.settled or wait <= 0:
        return fold
    # numbered below the first event told: a notification's progress always grows
    first = told[0][0] if told else fold.next_index
    await report(first - 1, f"{fold.session_id} {fold.turn_id}: {fold.status}")
    with anyio.move_on_after(wait):
        # what the turn did before the log was followed is told too: a turn this call just
        # started may be well on by then (its tool running), its events all in the backlog
        for index, said in told:
            await report(index, said)
        live = await sessions.events(fold.session_id, fold.next_index, follow=True)
        async with _closing(live):
            async for line in live:
                if not line:
                    continue  # a keep-alive
                event = decode_event(line)
                fold.add(event)
                if (said := describe(event)) is not None:
                    await report(event.meta.index, said)
                if fold.settled:
                    break
    return fold


async def _start(sessions: ChannelSessions, fold: TurnFold) -> int:
    """Where the fold reads the log from: where its turn (or the session's latest) starts,
    so a call costs the turn, not the session's history. It learns the latest turn that
    started first: a turn before it with no event of its own was no turn (a reset)."""
    latest = await sessions.latest_turn(fold.session_id)
    if latest is None:
        return 0  # no turn started: the log is the session's opening (and maybe its end)
    fold.latest = turn_number(latest)
    return await sessions.turn_start(fold.session_id, fold.turn_id or latest)


@contextlib.asynccontextmanager
async def _closing(stream: AsyncIterator[str]) -> AsyncIterator[None]:
    """Close the log reader however the wait ends (its database reads stop with it)."""
    try:
        yield
    finally:
        close = getattr(stream, "aclose", None)
        if close is not None:
            with anyio.CancelScope(shield=True):
                await close()


def describe(event: SessionEvent) -> str | None:
    """A progress message for ``event``; None for those not worth a notification (text
    deltas: the answer comes whole in the result)."""
    match event:
        case ActionsRequested():
            return "calling " + ", ".join(a.name for a in event.data.actions)
        case ActionResult():
            return f"{event.data.name}: {event.data.status}"
        case InputRequested():
            return "waiting for a person: " + ", ".join(r.kind for r in event.data.requests)
        case InputResolved():
            return f"answered {event.data.request_id}: {event.data.option_id}"
        case TurnStarted() | TurnCompleted() | TurnFailed() | TurnCancelled() | TurnWaiting():
            return f"{event.type} {event.data.turn_id}"
        case _:
            return None
