"""One AG-UI run as a window over a session's event log: eve events in, AG-UI events out.

Pure: ``RunView.feed`` takes the session's events in log order and returns what the run
streams for each; the channel (``eve.channels.kinds.ag_ui``) does the I/O. Events before
the window opens only build the ``MESSAGES_SNAPSHOT`` a reconnecting client is sent; the
window is one turn (``turn_id``), or the rest of a parked turn from the request a resume
answered. Ids are derived from the log, so a run replayed from the log streams the same
ids as the first time: a step's text is message ``<turn_id>.step<n>``, a call's result is
message ``<call_id>.result``, an interrupt's id is eve's ``request_id``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, assert_never

import msgspec
from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    CustomEvent,
    FunctionCall,
    Interrupt,
    Message,
    MessagesSnapshotEvent,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCall,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    ToolMessage,
    UserMessage,
)

from eve import events as ev

#: the ``reason`` of an interrupt, by the kind of eve request it stands for
INTERRUPT_REASONS = {
    "tool-approval": "tool_approval",
    "question": "question",
    "session-limit": "session_limit",
    "form": "form",
}
#: the prefix of the CUSTOM events that carry eve events AG-UI has no name for
CUSTOM_PREFIX = "eve:"

_USER_SUFFIX = ".user"
_LOGGED_USER = re.compile(r"turn_\d+" + re.escape(_USER_SUFFIX))

#: how a run ends: RUN_FINISHED (success, interrupt, cancelled) or RUN_ERROR
Ending = RunFinishedEvent | RunErrorEvent


def step_message_id(turn_id: str, step_index: int, retry: int = 0) -> str:
    """The id of the assistant message a step's text and tool calls belong to."""
    return f"{turn_id}.step{step_index}" + (f".retry{retry}" if retry else "")


def user_message_id(turn_id: str) -> str:
    """The id a snapshot gives the user message that started ``turn_id``."""
    return f"{turn_id}{_USER_SUFFIX}"


def is_logged_user_message(message_id: str) -> bool:
    """Whether ``message_id`` is one a snapshot gave: a message the session has already."""
    return _LOGGED_USER.fullmatch(message_id) is not None


def response_schema(request: ev.InputRequest) -> dict[str, Any]:
    """What a resume entry's ``payload`` for ``request`` is, as AG-UI's ``responseSchema``:
    ``{"optionId": <one of its options>}``, and for a form (an MCP server's elicitation) the
    form's ``values`` too, which ``accept`` needs when the form has fields."""
    options = [option.id for option in request.options]
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"optionId": {"type": "string", "enum": options}},
        "required": ["optionId"],
    }
    if isinstance(request, ev.FormRequest) and request.schema.get("properties"):
        schema["properties"]["values"] = request.schema
        schema["if"] = {"properties": {"optionId": {"const": "accept"}}}
        schema["then"] = {"required": ["optionId", "values"]}
    return schema


def interrupt_of(request: ev.InputRequest) -> Interrupt:
    """An eve input request as an AG-UI interrupt: answered by a resume entry whose
    ``payload`` fits ``response_schema``."""
    schema = response_schema(request)
    match request:
        case ev.ToolApprovalRequest():
            message = f"May {request.tool_name} run with {json.dumps(request.input)}?"
            call_id: str | None = request.call_id
        case ev.QuestionRequest():
            message, call_id = request.question, request.call_id
        case ev.SessionLimitRequest():
            message = f"The session reached {request.limit} ({request.used} of {request.allowed})"
            call_id = None
        case ev.FormRequest():
            message, call_id = f"{request.connection} asks: {request.message}", request.call_id
        case _:
            assert_never(request)
    return Interrupt(
        id=request.request_id,
        reason=INTERRUPT_REASONS[request.kind],
        message=message,
        tool_call_id=call_id,
        response_schema=schema,
        metadata={"eve": _plain(request)},
    )


def _plain(value: Any) -> Any:
    return msgspec.to_builtins(value)


@dataclass
class _History:
    """The conversation as AG-UI messages, folded from the log (``MESSAGES_SNAPSHOT``)."""

    messages: list[Message] = field(default_factory=list)

    def fold(self, event: ev.SessionEvent) -> None:
        data, turn = event.data, event.data.turn_id or ""
        match event:
            case ev.SessionReset():
                self.messages.clear()
            case ev.MessageReceived():
                self.messages.append(
                    UserMessage(id=user_message_id(turn), content=event.data.message)
                )
            case ev.MessageCompleted() if event.data.message:
                self._assistant(
                    step_message_id(turn, data.step_index or 0)
                ).content = event.data.message
            case ev.ActionsRequested():
                message = self._assistant(step_message_id(turn, data.step_index or 0))
                message.tool_calls = [*(message.tool_calls or []), *map(_call, event.data.actions)]
            case ev.ActionResult():
                failed = event.data.status != "completed"
                self.messages.append(
                    ToolMessage(
                        id=f"{event.data.call_id}.result",
                        tool_call_id=event.data.call_id,
                        content=event.data.output,
                        error=event.data.output if failed else None,
                    )
                )
            case _:
                pass

    def _assistant(self, message_id: str) -> AssistantMessage:
        last = self.messages[-1] if self.messages else None
        if isinstance(last, AssistantMessage) and last.id == message_id:
            return last
        message = AssistantMessage(id=message_id)
        self.messages.append(message)
        return message


def _call(action: ev.ActionRequest) -> ToolCall:
    arguments = json.dumps(action.input)
    return ToolCall(id=action.call_id, function=FunctionCall(name=action.name, arguments=arguments))


@dataclass
class RunView:
    """What one run streams. Open on ``turn_id``'s ``turn.started``, or, for a resume, on
    the ``input.requested`` holding one of ``answered`` (the request ids it answered)."""

    thread_id: str
    run_id: str
    session_id: str
    turn_id: str | None = None
    answered: frozenset[str] = frozenset()
    #: send a ``MESSAGES_SNAPSHOT`` of what came before the window when it opens
    snapshot: bool = False
    #: the log index the run reads from: at or before its window opens (0 with ``snapshot``,
    #: whose conversation is the whole log)
    start: int = 0
    #: set once the run's last event is known; nothing is streamed after it
    ending: Ending | None = None
    _open: bool = False
    _history: _History = field(default_factory=_History)
    _step: int | None = None
    _text: str | None = None
    _reasoning: str | None = None
    _retries: int = 0
    _pending: dict[str, Interrupt] = field(default_factory=dict)

    def feed(self, event: ev.SessionEvent) -> list[BaseEvent]:
        """The AG-UI events ``event`` becomes in this run (none outside its window)."""
        if self.ending is not None or event.data.session_id not in ("", self.session_id):
            return []  # a subagent's own events: its result reaches the run as a tool result
        if not self._open:
            if isinstance(event, ev.SessionCompleted):
                # the session ended before the run's turn began: it never will
                reason = event.data.reason
                self.ending = RunErrorEvent(message=f"the session ended ({reason})", code=reason)
                return []
            if not self._opens(event):
                self._history.fold(event)
                return []
            self._open = True
            if self.answered:
                # a resume: everything the turn said before its request is in the snapshot
                self._history.fold(event)
                return [*self._snapshot(), *self._translate(event)]
        if event.data.turn_id != self.turn_id:
            return []
        if isinstance(event, ev.MessageReceived):
            # the turn's own message is the snapshot's last: the client's copy of it is
            # replaced by the snapshot, and a client posting it again is recognised
            self._history.fold(event)
            return self._snapshot()
        return self._translate(event)

    def _snapshot(self) -> list[BaseEvent]:
        if not self.snapshot:
            return []
        return [MessagesSnapshotEvent(messages=self._history.messages)]

    def _opens(self, event: ev.SessionEvent) -> bool:
        match event:
            case ev.TurnStarted():
                return event.data.turn_id == self.turn_id and not self.answered
            case ev.InputRequested():
                ids = {request.request_id for request in event.data.requests}
                if self.answered & ids:
                    self.turn_id = event.data.turn_id
                    return True
                return False
            case _:
                return False

    def _translate(self, event: ev.SessionEvent) -> list[BaseEvent]:  # noqa: PLR0912
        out: list[BaseEvent] = []
        data = event.data
        if data.step_index is not None and not isinstance(event, ev.StepCompleted):
            out += self._enter_step(data.step_index)
        match event:
            case ev.ReasoningAppended():
                out += self._reason(event.data.reasoning_delta)
            case ev.MessageAppended():
                out += self._say(event.data.message_delta)
            case ev.MessageCompleted():
                if self._text is None and event.data.message:
                    out += self._say(event.data.message)
                out += self._close_text()
            case ev.ModelRetrying() | ev.ModelFallback():
                # text already streamed cannot be taken back: it ends here, and the retry's
                # (or the next model's) text is a message of its own
                out += self._close_text()
                self._retries += 1
                out.append(_custom(event))
            case ev.ActionsRequested():
                out += self._close_text()
                out += self._calls(event.data.actions)
            case ev.ActionResult():
                out.append(
                    ToolCallResultEvent(
                        message_id=f"{event.data.call_id}.result",
                        tool_call_id=event.data.call_id,
                        content=event.data.output,
                        role="tool",
                    )
                )
            case ev.InputRequested():
                for request in event.data.requests:
                    if request.request_id not in self.answered:
                        self._pending[request.request_id] = interrupt_of(request)
            case ev.InputResolved():
                self._pending.pop(event.data.request_id, None)
            case ev.TurnWaiting():
                if self._pending:
                    out += self._end(
                        RunFinishedInterruptOutcome(interrupts=[*self._pending.values()])
                    )
            case ev.StepCompleted():
                out += self._enter_step(event.data.step_index or 0)
                out += self._leave_step()
            case ev.TurnCompleted():
                out += self._end(None, result=event.data.output)
            case ev.TurnCancelled():
                out += self._end(RunFinishedCancelledOutcome())
            case ev.TurnFailed():
                out += self._close_all()
                self.ending = RunErrorEvent(message=event.data.error, code="turn_failed")
            case ev.StepStarted() | ev.TurnStarted() | ev.MessageReceived():
                pass
            case _:
                out.append(_custom(event))
        return out

    # --- what is open: a step, its text, its reasoning ------------------------------------

    def _enter_step(self, index: int) -> list[BaseEvent]:
        if self._step == index:
            return []
        out = self._leave_step()
        self._step, self._retries = index, 0
        return [*out, StepStartedEvent(step_name=f"step {index}")]

    def _leave_step(self) -> list[BaseEvent]:
        if self._step is None:
            return []
        out = self._close_text()
        out.append(StepFinishedEvent(step_name=f"step {self._step}"))
        self._step = None
        return out

    def _message_id(self) -> str:
        return step_message_id(self.turn_id or "", self._step or 0, self._retries)

    def _reason(self, delta: str) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        if self._reasoning is None:
            self._reasoning = self._message_id() + ".reasoning"
            out += [
                ReasoningStartEvent(message_id=self._reasoning),
                ReasoningMessageStartEvent(message_id=self._reasoning),
            ]
        if delta:
            out.append(ReasoningMessageContentEvent(message_id=self._reasoning, delta=delta))
        return out

    def _close_reasoning(self) -> list[BaseEvent]:
        if self._reasoning is None:
            return []
        done = self._reasoning
        self._reasoning = None
        return [ReasoningMessageEndEvent(message_id=done), ReasoningEndEvent(message_id=done)]

    def _say(self, delta: str) -> list[BaseEvent]:
        out = self._close_reasoning()
        if self._text is None:
            self._text = self._message_id()
            out.append(TextMessageStartEvent(message_id=self._text, role="assistant"))
        if delta:
            out.append(TextMessageContentEvent(message_id=self._text, delta=delta))
        return out

    def _close_text(self) -> list[BaseEvent]:
        out = self._close_reasoning()
        if self._text is not None:
            out.append(TextMessageEndEvent(message_id=self._text))
            self._text = None
        return out

    def _calls(self, actions: list[ev.ActionRequest]) -> list[BaseEvent]:
        parent = self._message_id()
        out: list[BaseEvent] = []
        for action in actions:
            out += [
                ToolCallStartEvent(
                    tool_call_id=action.call_id,
                    tool_call_name=action.name,
                    parent_message_id=parent,
                ),
                ToolCallArgsEvent(tool_call_id=action.call_id, delta=json.dumps(action.input)),
                ToolCallEndEvent(tool_call_id=action.call_id),
            ]
        return out

    def _close_all(self) -> list[BaseEvent]:
        return self._leave_step() if self._step is not None else self._close_text()

    def _end(
        self,
        outcome: RunFinishedInterruptOutcome | RunFinishedCancelledOutcome | None,
        *,
        result: Any = None,
    ) -> list[BaseEvent]:
        out = self._close_all()
        self.ending = RunFinishedEvent(
            thread_id=self.thread_id, run_id=self.run_id, outcome=outcome, result=result
        )
        return out

    def finish_without_turn(self) -> RunFinishedEvent:
        """The ending of a run that found no turn to show: the snapshot, and done."""
        self.ending = RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id)
        return self.ending

    def messages(self) -> MessagesSnapshotEvent:
        """The conversation folded so far, for a run that found no turn to show."""
        return MessagesSnapshotEvent(messages=self._history.messages)


def _custom(event: ev.SessionEvent) -> CustomEvent:
    return CustomEvent(name=CUSTOM_PREFIX + event.type, value=_plain(event.data))
