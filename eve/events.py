"""The session event vocabulary: one Struct per event type, a tagged union on ``type``.

Every event travels as ``{type, data, meta}``: on the wire (the NDJSON stream, ``eve run
--json``), in the event log, in durable step records and to hooks. ``data`` is the event's
own Struct, named after it (``turn.completed`` → ``TurnCompleted`` with ``TurnCompletedData``);
what every event's data carries is ``EventData``. Boundary data: the loop, sessions, the
server, the client and hooks import this module; it imports none of them.

Adding an event type: a ``<Name>Data(EventData)`` with its fields, a ``<Name>(Event,
tag="<type>")`` whose ``data`` is it, a member of ``SessionEvent``, a row in the event table
of docs/http-api.md (tests/test_docs.py checks the table against these types), and the emit
call. Emitting code builds only the data (``TurnStartedData(turn_id=...)``); the emitter
adds ``session_id``, the delegation link and ``meta``.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Literal, get_args, get_type_hints

import msgspec

from eve._usage import TokenUsage
from eve.auth.principal import PrincipalRef
from eve.costs import Cost, Spend
from eve.messages import StopReason

__all__ = [
    "EVENT_TYPES",
    "ActionPartial",
    "ActionPartialData",
    "ActionRequest",
    "ActionResult",
    "ActionResultData",
    "ActionsRequested",
    "ActionsRequestedData",
    "Attachment",
    "AuthorizationRequired",
    "AuthorizationRequiredData",
    "CompactionFailed",
    "CompactionFailedData",
    "CompactionReason",
    "ConnectionFailed",
    "ConnectionFailedData",
    "Delegation",
    "Event",
    "EventData",
    "EventMeta",
    "EventType",
    "FormRequest",
    "HookFailed",
    "HookFailedData",
    "InputRequest",
    "InputRequested",
    "InputRequestedData",
    "InputResolved",
    "InputResolvedData",
    "Invocation",
    "MessageAppended",
    "MessageAppendedData",
    "MessageCompleted",
    "MessageCompletedData",
    "MessageReceived",
    "MessageReceivedData",
    "ModelFallback",
    "ModelFallbackData",
    "ModelRetrying",
    "ModelRetryingData",
    "Option",
    "OtherEvent",
    "ParentLink",
    "QuestionRequest",
    "ReasoningAppended",
    "ReasoningAppendedData",
    "RequestKind",
    "ResultStatus",
    "SessionCompacted",
    "SessionCompactedData",
    "SessionCompleted",
    "SessionCompletedData",
    "SessionEvent",
    "SessionLimitRequest",
    "SessionReset",
    "SessionResetData",
    "SessionStarted",
    "SessionStartedData",
    "SessionWaiting",
    "SessionWaitingData",
    "SkillLoaded",
    "SkillLoadedData",
    "StepCompleted",
    "StepCompletedData",
    "StepStarted",
    "StepStartedData",
    "TaskKind",
    "TaskSettled",
    "TaskSettledData",
    "TaskStarted",
    "TaskStartedData",
    "ToolApprovalRequest",
    "TurnCancelled",
    "TurnCancelledData",
    "TurnCompleted",
    "TurnCompletedData",
    "TurnFailed",
    "TurnFailedData",
    "TurnStarted",
    "TurnStartedData",
    "TurnStop",
    "TurnWaiting",
    "TurnWaitingData",
    "decode_any_event",
    "decode_event",
]

#: how a turn ended: the model answered, the max-turns limit, cancelled, or a person ended
#: the session on a session limit before the model was done
TurnStop = Literal["complete", "max_turns", "aborted", "session_limit"]
#: a tool call's outcome: ran, failed (the model sees the error), refused by an approval rule
ResultStatus = Literal["completed", "failed", "rejected"]
#: what runs outside a step (``execution.tasks``)
TaskKind = Literal["subagent", "workflow-tool"]


class EventMeta(msgspec.Struct, frozen=True, kw_only=True):
    #: ``evt_`` + a time-ordered unique suffix
    id: str
    #: ISO-8601 UTC timestamp
    at: str
    #: position in the session's event log, from 0
    index: int


class ParentLink(msgspec.Struct, frozen=True, kw_only=True):
    """Where a delegated (subagent) session's events come from: its caller's session and call."""

    session_id: str
    call_id: str


class Delegation(msgspec.Struct, frozen=True, kw_only=True):
    """What every event of a delegated (subagent) session carries besides its own data."""

    node_id: str
    parent: ParentLink


class _Wire(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Optional fields are left out of the JSON when unset, as they always were."""


class EventData(_Wire, frozen=True, kw_only=True):
    """What every event's data carries."""

    #: the session the event belongs to (a subagent's own session id for its events)
    session_id: str = ""
    #: a subagent's events: the node (``researcher``) and the call that started its session
    node_id: str | None = None
    parent: ParentLink | None = None
    turn_id: str | None = None
    #: inside a step: which model call of the turn, from 0
    step_index: int | None = None
    #: a durable step that ran again after a crash: which run (1 for the first re-run)
    attempt: int | None = None


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    """The envelope: ``type`` (the tag), the event's ``data`` and its ``meta``."""

    data: EventData
    meta: EventMeta

    @property
    def type(self) -> EventType:
        """The event's type (``turn.completed``): the tag it is encoded with."""
        tag: EventType = self.__struct_config__.tag  # type: ignore[assignment]
        return tag


# --- sessions ----------------------------------------------------------------------------


class Invocation(_Wire, frozen=True, kw_only=True):
    """What started a session other than a request: a schedule's tick (docs/schedules.md)."""

    #: what started it (always written: a reader tells invocations apart by it)
    kind: Literal["schedule"]
    #: the schedule's name (``reports/daily``)
    name: str
    #: the ISO-8601 time the tick was due, in the schedule's time zone
    tick: str
    #: a run someone asked for (``eve schedules run``, the HTTP route, the dev UI)
    manual: bool = False


class SessionStartedData(EventData, frozen=True, kw_only=True):
    #: a schedule's tick, when one started the session
    invocation: Invocation | None = None
    #: the session this one is a fork of (``POST …/fork``), when it is one
    forked_from: str | None = None


class SessionStarted(Event, frozen=True, kw_only=True, tag="session.started"):
    """A session was created (before its first turn)."""

    data: SessionStartedData


class SessionWaitingData(EventData, frozen=True, kw_only=True):
    pass


class SessionWaiting(Event, frozen=True, kw_only=True, tag="session.waiting"):
    """A turn ended and the session takes the next message."""

    data: SessionWaitingData


class SessionCompletedData(EventData, frozen=True, kw_only=True):
    #: why the session ended (``max_input_tokens_per_session`` …)
    reason: str


class SessionCompleted(Event, frozen=True, kw_only=True, tag="session.completed"):
    """The session ended: it takes no more messages."""

    data: SessionCompletedData


class SessionResetData(EventData, frozen=True, kw_only=True):
    pass


class SessionReset(Event, frozen=True, kw_only=True, tag="session.reset"):
    """History and state were cleared."""

    data: SessionResetData


#: why a compaction ran: the context passed the threshold, or someone asked for it
CompactionReason = Literal["threshold", "requested"]


class SessionCompactedData(EventData, frozen=True, kw_only=True):
    #: the estimated tokens of the context before and after (see docs/sessions.md)
    tokens_before: int
    tokens_after: int
    #: how many messages the summary stands for
    messages_folded: int
    #: the model that wrote the summary
    model: str
    #: what writing the summary cost (it counts toward the session)
    usage: TokenUsage
    reason: CompactionReason


class SessionCompacted(Event, frozen=True, kw_only=True, tag="session.compacted"):
    """Older history was folded into a summary the model reads instead."""

    data: SessionCompactedData


class CompactionFailedData(EventData, frozen=True, kw_only=True):
    #: ``ErrorName: message``, redacted
    error: str
    #: what was done instead: the oldest history is left out of the request (trimmed)
    fallback: Literal["trim"]


class CompactionFailed(Event, frozen=True, kw_only=True, tag="session.compaction_failed"):
    """A warning: the summary could not be written, so the request was trimmed instead."""

    data: CompactionFailedData


# --- turns -------------------------------------------------------------------------------


class TurnStartedData(EventData, frozen=True, kw_only=True):
    pass


class TurnStarted(Event, frozen=True, kw_only=True, tag="turn.started"):
    """A turn began."""

    data: TurnStartedData


class Attachment(_Wire, frozen=True, kw_only=True):
    """An image or document that came with the user's message, without its content."""

    type: Literal["image", "document"]
    media_type: str
    #: a document's file name, when it has one
    name: str | None = None
    #: the content's length in bytes (content sent as data)
    size: int | None = None
    #: where the provider fetches it from (content sent as a URL)
    url: str | None = None


class MessageReceivedData(EventData, frozen=True, kw_only=True):
    #: the user's message as the model receives it: its text
    message: str
    #: the images and documents that came with it, in order (left out when none)
    attachments: list[Attachment] = []


class MessageReceived(Event, frozen=True, kw_only=True, tag="message.received"):
    """The turn's user message was recorded."""

    data: MessageReceivedData


class ConnectionFailedData(EventData, frozen=True, kw_only=True):
    #: the MCP connection's name (its file under ``connections/``)
    connection: str
    #: the named error (``MCPServerUnavailable: …``); the turn goes on without its tools
    error: str


class ConnectionFailed(Event, frozen=True, kw_only=True, tag="connection.failed"):
    """An MCP connection's tools could not be listed for the turn."""

    data: ConnectionFailedData


class AuthorizationRequiredData(EventData, frozen=True, kw_only=True):
    #: the MCP connection's name (its file under ``connections/``)
    connection: str
    #: where the person signs in (the authorization server's page); the turn waits
    url: str
    #: how long the turn waits for the sign-in before the call fails
    timeout_seconds: float


class AuthorizationRequired(Event, frozen=True, kw_only=True, tag="authorization.required"):
    """An MCP connection needs a person to sign in (OAuth): open ``url``; the turn goes on
    once the authorization server sends them back to eve's callback."""

    data: AuthorizationRequiredData


class TurnCompletedData(EventData, frozen=True, kw_only=True):
    stop_reason: TurnStop
    #: the turn's tokens, all its steps together (its subagents' included)
    usage: TokenUsage
    #: what they cost (docs/costs.md); None only in events of an eve before costs
    cost: Cost | None = None
    #: the session's tokens and cost so far, this turn included (None outside a session)
    session: Spend | None = None
    #: the validated final answer as JSON, for an agent with ``output_schema``
    output: Any = None
    #: why the last step's model response ended (``max_tokens``: the answer was cut at the
    #: output token limit); None in events of an eve before it was reported
    finish_reason: StopReason | None = None


class TurnCompleted(Event, frozen=True, kw_only=True, tag="turn.completed"):
    """A turn ended normally (an answer, or the max-turns limit)."""

    data: TurnCompletedData


class TurnFailedData(EventData, frozen=True, kw_only=True):
    #: ``ErrorName: message``, redacted
    error: str


class TurnFailed(Event, frozen=True, kw_only=True, tag="turn.failed"):
    """A turn ended with an error; the session takes the next message."""

    data: TurnFailedData


class TurnCancelledData(EventData, frozen=True, kw_only=True):
    reason: str


class TurnCancelled(Event, frozen=True, kw_only=True, tag="turn.cancelled"):
    """A turn was cancelled; calls it had not run are closed as failed."""

    data: TurnCancelledData


class TurnWaitingData(EventData, frozen=True, kw_only=True):
    #: what the turn waits for: a person's answer
    on: Literal["input"]


class TurnWaiting(Event, frozen=True, kw_only=True, tag="turn.waiting"):
    """A turn parked until someone answers its ``input.requested``."""

    data: TurnWaitingData


# --- steps and the model's output --------------------------------------------------------


class StepStartedData(EventData, frozen=True, kw_only=True):
    pass


class StepStarted(Event, frozen=True, kw_only=True, tag="step.started"):
    """A model call is about to be made."""

    data: StepStartedData


class ModelRetryingData(EventData, frozen=True, kw_only=True):
    #: which retry this is (1 for the first)
    retry: int
    #: seconds until it is made
    delay: float
    #: what failed, redacted
    reason: str


class ModelRetrying(Event, frozen=True, kw_only=True, tag="model.retrying"):
    """The model call failed in a way worth retrying; text it streamed in this step is void."""

    data: ModelRetryingData


class ModelFallbackData(EventData, frozen=True, kw_only=True):
    #: the model that failed
    from_model: str
    #: the next model of the chain, asked now
    to_model: str
    #: what failed, redacted
    reason: str


class ModelFallback(Event, frozen=True, kw_only=True, tag="model.fallback"):
    """The model failed past its retries or is down, and the step asks the next model of
    the agent's fallback chain; text it streamed in this step is void, as after a retry."""

    data: ModelFallbackData


class ReasoningAppendedData(EventData, frozen=True, kw_only=True):
    reasoning_delta: str


class ReasoningAppended(Event, frozen=True, kw_only=True, tag="reasoning.appended"):
    """A piece of the model's reasoning, as it streams."""

    data: ReasoningAppendedData


class MessageAppendedData(EventData, frozen=True, kw_only=True):
    message_delta: str


class MessageAppended(Event, frozen=True, kw_only=True, tag="message.appended"):
    """A piece of the model's text, as it streams."""

    data: MessageAppendedData


class MessageCompletedData(EventData, frozen=True, kw_only=True):
    #: the step's whole text
    message: str
    finish_reason: StopReason


class MessageCompleted(Event, frozen=True, kw_only=True, tag="message.completed"):
    """The model's text for this step is complete."""

    data: MessageCompletedData


class StepCompletedData(EventData, frozen=True, kw_only=True):
    finish_reason: StopReason
    #: the turn's tokens so far
    usage: TokenUsage
    #: what the turn's tokens so far cost (docs/costs.md)
    cost: Cost | None = None
    #: this step's own tokens and cost: its model call and the subagents it called
    step: Spend | None = None


class StepCompleted(Event, frozen=True, kw_only=True, tag="step.completed"):
    """A model call and every tool call it asked for are done."""

    data: StepCompletedData


# --- tool calls --------------------------------------------------------------------------


class ActionRequest(_Wire, frozen=True, kw_only=True):
    """One call of ``actions.requested``, as it runs."""

    call_id: str
    name: str
    input: dict[str, Any]
    #: the tool the model called to reach this one (``eve__tool`` for a catalog entry)
    via: str | None = None
    #: the MCP connection whose server runs the tool, if any
    connection: str | None = None


class ActionsRequestedData(EventData, frozen=True, kw_only=True):
    actions: list[ActionRequest]


class ActionsRequested(Event, frozen=True, kw_only=True, tag="actions.requested"):
    """The model asked for tool calls."""

    data: ActionsRequestedData


class ActionPartialData(EventData, frozen=True, kw_only=True):
    call_id: str
    name: str
    #: a string as the tool gave it, anything else as JSON data
    partial: Any


class ActionPartial(Event, frozen=True, kw_only=True, tag="action.partial"):
    """A running tool's progress (a generator's yield, a workflow tool's ``progress``, an
    MCP server's progress notification)."""

    data: ActionPartialData


class ActionResultData(EventData, frozen=True, kw_only=True):
    call_id: str
    name: str
    status: ResultStatus
    #: the result's text: what the model reads, or, for a result over the model's cap, the
    #: whole text up to 1,000,000 characters (``eve.execution.tool_output``)
    output: str
    #: the MCP connection whose server ran the tool, if any
    connection: str | None = None
    #: a tool that raised: its traceback from the tool's frame on (the last 50 frames, at
    #: most 8 KB, redacted), for a person; the model reads only ``output``
    traceback: str | None = None


class ActionResult(Event, frozen=True, kw_only=True, tag="action.result"):
    """A tool call's one result."""

    data: ActionResultData


class SkillLoadedData(EventData, frozen=True, kw_only=True):
    call_id: str
    #: the skill's name
    name: str


class SkillLoaded(Event, frozen=True, kw_only=True, tag="skill.loaded"):
    """An ``eve__skill`` call loaded a skill."""

    data: SkillLoadedData


class TaskStartedData(EventData, frozen=True, kw_only=True):
    call_id: str
    name: str
    kind: TaskKind
    task_id: str


class TaskStarted(Event, frozen=True, kw_only=True, tag="task.started"):
    """A call began to run as a task (a subagent, a workflow tool)."""

    data: TaskStartedData


class TaskSettledData(EventData, frozen=True, kw_only=True):
    call_id: str
    name: str
    task_id: str
    status: ResultStatus
    #: a subagent's tokens and cost, counted in the caller's step, turn and session
    spend: Spend | None = None


class TaskSettled(Event, frozen=True, kw_only=True, tag="task.settled"):
    """A task ended; its ``action.result`` follows."""

    data: TaskSettledData


# --- people ------------------------------------------------------------------------------


class Option(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    label: str


#: what asks a person: a tool call's approval, a workflow tool's question, a session limit,
#: an MCP server's form (elicitation) or its request to use the agent's model (sampling)
RequestKind = Literal["tool-approval", "question", "session-limit", "form"]


class _Request(_Wire, frozen=True, kw_only=True, tag_field="kind"):
    request_id: str
    #: what the person may answer (``optionId`` in the answer)
    options: list[Option]

    @property
    def kind(self) -> RequestKind:
        """``tool-approval``, ``question`` or ``session-limit``: the tag it is encoded with."""
        tag: RequestKind = self.__struct_config__.tag  # type: ignore[assignment]
        return tag


class _ToolRequest(_Request, frozen=True, kw_only=True):
    #: the tool whose call asks
    tool_name: str
    call_id: str


class ToolApprovalRequest(_ToolRequest, frozen=True, kw_only=True, tag="tool-approval"):
    """May this call run? Options ``approve`` and ``deny``."""

    input: dict[str, Any]
    #: the approval rule that asks: ``always``, ``once`` or ``policy``
    rule: str
    #: who may answer besides the principal whose message asked and operators
    #: (``role:<name>``, from the rule's ``by=``); absent: nobody else
    by: str | None = None


class QuestionRequest(_ToolRequest, frozen=True, kw_only=True, tag="question"):
    """A workflow tool's question, with its own options."""

    question: str
    task_id: str


class SessionLimitRequest(_Request, frozen=True, kw_only=True, tag="session-limit"):
    """The session crossed one of its limits: raise it (``raise``) or end the session
    (``end``). Amounts are decimal strings: tokens, or USD for the cost limit."""

    #: ``max_input_tokens_per_session``, ``max_output_tokens_per_session`` or
    #: ``max_cost_usd_per_session``
    limit: str
    #: the session's total that crossed it, and what it was allowed
    used: Decimal
    allowed: Decimal
    #: how much ``raise`` adds: the configured limit again
    raise_by: Decimal
    #: the session's tokens by kind and their cost so far
    usage: TokenUsage
    cost: Cost


class FormRequest(_ToolRequest, frozen=True, kw_only=True, tag="form"):
    """An MCP server asks, while it runs the call: its ``message``, and the fields of
    ``schema`` (a flat JSON Schema object) to fill in. Options ``accept`` (with ``values``
    in the answer), ``decline`` and ``cancel``. ``purpose`` is ``sampling`` when the server
    asks to use the agent's model (no fields: ``accept`` allows it)."""

    connection: str
    message: str
    schema: dict[str, Any]
    purpose: Literal["elicitation", "sampling"] = "elicitation"


InputRequest = ToolApprovalRequest | QuestionRequest | SessionLimitRequest | FormRequest


class InputRequestedData(EventData, frozen=True, kw_only=True):
    requests: list[InputRequest]


class InputRequested(Event, frozen=True, kw_only=True, tag="input.requested"):
    """A person must answer before the turn goes on."""

    data: InputRequestedData


class InputResolvedData(EventData, frozen=True, kw_only=True):
    request_id: str
    #: the option chosen, or ``cancelled`` when the turn was cancelled first
    option_id: str
    #: who answered (id and kind, never claims); absent for ``cancelled``
    responder: PrincipalRef | None = None


class InputResolved(Event, frozen=True, kw_only=True, tag="input.resolved"):
    """A request was answered (or cancelled)."""

    data: InputResolvedData


# --- hooks -------------------------------------------------------------------------------


class HookFailedData(EventData, frozen=True, kw_only=True):
    #: the hook's name, or ``eve.plugins:<entry point>`` for a framework plugin
    hook: str
    #: where its code is
    source: str
    #: the type of the event it failed on
    event: str
    #: ``ErrorName: message``, redacted
    error: str


class HookFailed(Event, frozen=True, kw_only=True, tag="hook.failed"):
    """A hook raised; the others ran and the turn went on."""

    data: HookFailedData


SessionEvent = (
    SessionStarted
    | TurnStarted
    | MessageReceived
    | ConnectionFailed
    | AuthorizationRequired
    | StepStarted
    | ModelRetrying
    | ModelFallback
    | ReasoningAppended
    | MessageAppended
    | MessageCompleted
    | ActionsRequested
    | InputRequested
    | InputResolved
    | ActionPartial
    | SkillLoaded
    | TaskStarted
    | TaskSettled
    | ActionResult
    | StepCompleted
    | TurnCompleted
    | TurnFailed
    | TurnCancelled
    | TurnWaiting
    | SessionWaiting
    | SessionCompleted
    | SessionReset
    | SessionCompacted
    | CompactionFailed
    | HookFailed
)
"""Any session event; ``match`` on its class (or ``event.type``) to read its data."""

EVENT_CLASSES: tuple[type[Event], ...] = get_args(SessionEvent)
#: every event type, in the order a session produces them
EVENT_TYPES: tuple[str, ...] = tuple(str(c.__struct_config__.tag) for c in EVENT_CLASSES)
EventType = Literal[
    "session.started",
    "turn.started",
    "message.received",
    "connection.failed",
    "authorization.required",
    "step.started",
    "model.retrying",
    "model.fallback",
    "reasoning.appended",
    "message.appended",
    "message.completed",
    "actions.requested",
    "input.requested",
    "input.resolved",
    "action.partial",
    "skill.loaded",
    "task.started",
    "task.settled",
    "action.result",
    "step.completed",
    "turn.completed",
    "turn.failed",
    "turn.cancelled",
    "turn.waiting",
    "session.waiting",
    "session.completed",
    "session.reset",
    "session.compacted",
    "session.compaction_failed",
    "hook.failed",
]
_EVENT_OF_DATA: dict[type[EventData], type[Event]] = {
    get_type_hints(cls)["data"]: cls for cls in EVENT_CLASSES
}


def event_class(data: EventData) -> type[Event]:
    """The event whose data ``data`` is (``TurnStartedData`` → ``TurnStarted``)."""
    return _EVENT_OF_DATA[type(data)]


def event_of(data: EventData, meta: EventMeta) -> SessionEvent:
    """The event carrying ``data``."""
    event: SessionEvent = event_class(data)(data=data, meta=meta)  # type: ignore[assignment]
    return event


class OtherEvent(msgspec.Struct, frozen=True, kw_only=True):
    """An event of a type this eve does not know (a newer server's), kept as plain data."""

    type: str
    data: dict[str, Any]
    meta: EventMeta


_decoder = msgspec.json.Decoder(SessionEvent)
_other = msgspec.json.Decoder(OtherEvent)


def decode_event(line: bytes | str) -> SessionEvent:
    """One event as the stream and the event log hold it; raises ``msgspec`` errors."""
    return _decoder.decode(line)


def decode_any_event(line: bytes | str) -> SessionEvent | OtherEvent:
    """Like ``decode_event``, but an unknown type becomes an ``OtherEvent`` (for clients
    of a server newer than themselves)."""
    try:
        return _decoder.decode(line)
    except msgspec.ValidationError:
        other = _other.decode(line)
        if other.type in EVENT_TYPES:
            raise
        return other
