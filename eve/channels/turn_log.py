"""One turn of a session, read off its durable event log as a text-only channel tells it.

The OpenAI-compatible and Slack kinds show a turn as text: what the agent said, then how the
turn ended (done, failed, cancelled, or waiting on a person). Tool calls stay inside eve.
Everything here is derived from the session store (its log, and the engine's open input
requests), so a dropped connection, a second worker or a restarted server reads the same turn
the same way; no channel keeps state of its own. A turn is read from where it starts in the
log, never from index 0: a turn costs the same on a session's first message as on its
thousandth.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Literal, assert_never

from eve._usage import TokenUsage
from eve.channels.form_answers import StructuredAnswer, form_prompt, structured_answer
from eve.channels.sessions import ChannelSessions
from eve.errors import ChannelAnswerExpected
from eve.events import (
    FormRequest,
    InputRequest,
    InputRequested,
    InputResolved,
    MessageAppended,
    MessageCompleted,
    QuestionRequest,
    SessionEvent,
    SessionLimitRequest,
    ToolApprovalRequest,
    TurnCancelled,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
    decode_event,
)
from eve.sessions import InputResponse
from eve.sessions.turn_workflow import turn_id_of

#: how a turn, as far as the log tells, has stopped: ``waiting`` parks it on a person
EndStatus = Literal["completed", "failed", "cancelled", "waiting"]


@dataclass(frozen=True, kw_only=True)
class Delta:
    """Text the agent said; between two of its messages comes a blank line."""

    text: str
    #: the log index of the event it comes from
    index: int


@dataclass(frozen=True, kw_only=True)
class Ended:
    status: EndStatus
    index: int
    usage: TokenUsage | None = None
    #: a failed turn's error, as the log holds it (redacted)
    error: str | None = None
    #: what the turn waits on, when ``waiting``
    requests: list[InputRequest] = field(default_factory=list)


Piece = Delta | Ended


def _ending(event: SessionEvent) -> Ended | None:
    index = event.meta.index
    match event:
        case TurnCompleted():
            return Ended(status="completed", index=index, usage=event.data.usage)
        case TurnFailed():
            return Ended(status="failed", index=index, error=event.data.error)
        case TurnCancelled():
            return Ended(status="cancelled", index=index)
        case InputRequested():
            return Ended(status="waiting", index=index, requests=list(event.data.requests))
        case _:
            return None


class _Said:
    """The text of one turn as it streams: its messages' deltas, a blank line between two."""

    def __init__(self) -> None:
        self.said = False
        self.fresh = True

    def add(self, event: SessionEvent) -> str | None:
        """The text ``event`` adds, or None when it adds none."""
        if isinstance(event, MessageCompleted):
            self.fresh = True
        if not isinstance(event, MessageAppended) or not event.data.message_delta:
            return None
        gap = "\n\n" if self.fresh and self.said else ""
        self.said, self.fresh = True, False
        return gap + event.data.message_delta


async def turn_pieces(
    sessions: ChannelSessions, session_id: str, turn_id: str, start: int, *, follow: bool
) -> AsyncIterator[Piece | None]:
    """The turn's text and its end from log index ``start`` on (``None``: a keep-alive
    while following). Without ``follow`` it stops where the log does, perhaps with no end."""
    said = _Said()
    lines = await sessions.events(session_id, start, follow=follow)
    async for line in lines:
        if not line:
            yield None
            continue
        event = decode_event(line)
        if event.data.turn_id != turn_id:
            continue
        if (text := said.add(event)) is not None:
            yield Delta(text=text, index=event.meta.index)
        elif (end := _ending(event)) is not None:
            yield end
            return


@dataclass(frozen=True, kw_only=True)
class Pending:
    """A request that waits on a person, with the turn it parks."""

    turn_id: str
    request: InputRequest


@dataclass(frozen=True, kw_only=True)
class LogHead:
    """Where a session's log ends, and what of it still waits on a person."""

    next_index: int
    pending: list[Pending]


async def log_head(sessions: ChannelSessions, session_id: str) -> LogHead:
    """What of the session waits on a person, as the engine has it, each request as the log
    tells it, and an index to read the session's turn on from (past those requests).

    The engine's open request rows decide (``ChannelSessions.open_requests``): they are
    written before the log says a turn waits and closed before it says the answer was
    taken, so the log alone could call a message an answer to a request already answered,
    or a new turn when the engine already waits. Only the asking workflows' stretch of the
    log is read, and a request the log does not show yet is waited for (its
    ``input.requested`` is being flushed, or its turn's end, when it died asking)."""
    end, rows, start = await sessions.open_requests(session_id)
    if not rows:
        return LogHead(next_index=end, pending=[])
    unsettled = {row.request_id: turn_id_of(row.workflow_id) for row in rows}
    found: dict[str, Pending] = {}
    next_index = start if start is not None else end
    lines = await sessions.events(session_id, next_index, follow=True)
    try:
        async for line in lines:
            if not line:
                continue
            event = decode_event(line)
            next_index = event.meta.index + 1
            _settle(event, unsettled, found)
            if not unsettled and next_index >= end:
                break
    finally:
        # the follower leaves the session's feed now, not when the reader is collected
        if (close := getattr(lines, "aclose", None)) is not None:
            await close()
    return LogHead(next_index=next_index, pending=list(found.values()))


def _settle(
    event: SessionEvent, unsettled: dict[str, str | None], found: dict[str, Pending]
) -> None:
    """Fold ``event`` into the open requests: each is settled once the log shows it asked,
    or answered, or its turn ended (a turn that ended took its unanswered requests along)."""
    turn = event.data.turn_id or ""
    match event:
        case InputRequested():
            for request in event.data.requests:
                if request.request_id in unsettled:
                    del unsettled[request.request_id]
                    found[request.request_id] = Pending(turn_id=turn, request=request)
        case InputResolved():
            unsettled.pop(event.data.request_id, None)
            found.pop(event.data.request_id, None)
        case TurnCompleted() | TurnFailed() | TurnCancelled():
            for request_id in [r for r, of in unsettled.items() if of == turn]:
                del unsettled[request_id]
            for request_id in [r for r, p in found.items() if p.turn_id == turn]:
                del found[request_id]
        case _:
            pass


def prompt(request: InputRequest) -> str:
    """What a text-only channel shows a person for ``request``, ending with the answers."""
    answers = ", ".join(option.id for option in request.options)
    match request:
        case ToolApprovalRequest():
            asked = (
                f"Approval needed: the agent wants to run `{request.tool_name}` with "
                f"{json.dumps(request.input, sort_keys=True)}."
            )
        case QuestionRequest():
            asked = request.question
        case SessionLimitRequest():
            asked = (
                f"The session reached its limit {request.limit} "
                f"({request.used} of {request.allowed})."
            )
        case FormRequest():
            # accepted with values by a structured reply (form_answers)
            asked = form_prompt(request)
        case _:
            assert_never(request)
    return f"{asked} Reply with one of: {answers}."


def text_answers(text: str, pending: list[Pending], *, param: str) -> list[InputResponse]:
    """``text`` as the answer to every pending request: an option's id or label (any case),
    or a structured answer (``form_answers``: an option with a form's values). Anything else
    is refused, so a message cannot queue behind a parked turn unanswered."""
    if (structured := structured_answer(text, param=param)) is not None:
        return [_structured(structured, waiting, param=param) for waiting in pending]
    said = text.strip().lower()
    responses = []
    for waiting in pending:
        options = waiting.request.options
        chosen = [o.id for o in options if said in (o.id.lower(), o.label.lower())]
        if not chosen:
            ids = [o.id for o in options]
            raise ChannelAnswerExpected(
                f"the session waits on an answer to {waiting.request.request_id} "
                f"({prompt(waiting.request)}); got {text.strip()[:80]!r}",
                param=param,
                options=ids,
            )
        responses.append(InputResponse(request_id=waiting.request.request_id, option_id=chosen[0]))
    return responses


def _structured(answer: StructuredAnswer, waiting: Pending, *, param: str) -> InputResponse:
    request = waiting.request
    options = [o.id for o in request.options]
    if answer.option_id not in options:
        raise ChannelAnswerExpected(
            f"the session waits on an answer to {request.request_id}, one of "
            f"{', '.join(options)}; got optionId {answer.option_id!r}",
            param=param,
            options=options,
        )
    values = answer.values if isinstance(request, FormRequest) else None
    return InputResponse(request_id=request.request_id, option_id=answer.option_id, values=values)


@dataclass(frozen=True, kw_only=True)
class Started:
    """Where a channel request left the session: the turn to show, read from ``start``."""

    session_id: str
    turn_id: str
    start: int


async def start_turn(
    sessions: ChannelSessions,
    session_id: str | None,
    message: str,
    *,
    answers: list[InputResponse] | None = None,
    key: str | None = None,
    param: str,
) -> Started:
    """Open a session with ``message``, or continue ``session_id``: the message answers
    what its turn waits on (``answers``, else the text as an option), or starts a turn."""
    if session_id is None:
        accepted = await sessions.create(message, key=key)
        assert accepted.turn_id is not None  # a create with a message queues turn_0
        return Started(session_id=accepted.session_id, turn_id=accepted.turn_id, start=0)
    head = await log_head(sessions, session_id)
    if head.pending or answers:
        chosen = answers or text_answers(message, head.pending, param=param)
        # an answer to a request that is not waiting is refused here (InputRequestNotPending)
        await sessions.respond(session_id, chosen, key=key)
        turn = head.pending[0].turn_id
        return Started(session_id=session_id, turn_id=turn, start=head.next_index)
    accepted = await sessions.send(session_id, message, key=key)
    assert accepted.turn_id is not None  # a message always queues a turn
    # a replayed request's turn may be behind the log's head: read it from its start
    replayed = accepted.replayed
    start = await sessions.turn_start(session_id, accepted.turn_id) if replayed else head.next_index
    return Started(session_id=session_id, turn_id=accepted.turn_id, start=start)


@dataclass(frozen=True, kw_only=True)
class Reply:
    """A stretch of a turn up to where it stopped (its end, or a wait on a person): what a
    channel that answers once per stop (Slack) posts for it."""

    turn_id: str
    text: str
    end: Ended


async def log_replies(sessions: ChannelSessions, session_id: str) -> list[Reply]:
    """Every stop of every turn in the session's log, with the text said before it."""
    replies: list[Reply] = []
    texts: dict[str, list[str]] = {}
    saying: dict[str, _Said] = {}
    async for line in await sessions.events(session_id, 0, follow=False):
        if not line:
            continue
        event = decode_event(line)
        turn = event.data.turn_id
        if turn is None:
            continue
        if (text := saying.setdefault(turn, _Said()).add(event)) is not None:
            texts.setdefault(turn, []).append(text)
        elif (end := _ending(event)) is not None:
            replies.append(Reply(turn_id=turn, text="".join(texts.pop(turn, [])), end=end))
            saying[turn] = _Said()
    return replies


async def running_turn(sessions: ChannelSessions, session_id: str) -> tuple[str, int] | None:
    """The turn the engine runs now, with the log index to follow it from: where it started,
    or where it went on after its last answered wait. None when no turn runs, or when the
    log shows the running one stopped: ended (the engine's row outlives its last event by a
    moment), or waiting on a person, which the engine counts as running but a channel
    answers now (its prompt), not when the turn ends.

    Only the turn's own stretch of the log is read (from ``turn_start``): a sweep costs
    each session its running turn, not its history."""
    turn = await sessions.running_turn(session_id)
    if turn is None:
        return None
    start = await sessions.turn_start(session_id, turn)
    # a turn the engine runs but whose first event is not written yet goes on from ``start``
    going: int | None = start
    async for line in await sessions.events(session_id, start, follow=False):
        event = decode_event(line) if line else None
        if event is None or event.data.turn_id != turn:
            continue
        if _ending(event) is not None:
            going = None
        elif isinstance(event, TurnStarted | InputResolved) and going is None:
            # only these set a turn going again: hooks' events carry its id after it stopped
            going = event.meta.index
    return None if going is None else (turn, going)
