"""An eve turn as an A2A task: its id, and the fold of its events into a ``Task`` and updates.

A task is a turn of a session (the A2A context), so its id says which: ``<session id>:<turn
id>``; nothing maps one to the other but that string. ``TurnView`` reads the session's event
log one event at a time and keeps what the task is so far (state, history, artifacts, the
requests it waits on); each event it takes returns the A2A updates a stream sends for it,
so a snapshot (``GetTask``) and a live stream are the same fold.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, assert_never

import msgspec
from a2a.helpers import new_data_part, new_text_part
from a2a.types import (
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import TaskNotFoundError

from eve.events import (
    ActionPartial,
    ActionResult,
    ActionsRequested,
    AuthorizationRequired,
    CompactionFailed,
    ConnectionFailed,
    FormRequest,
    HookFailed,
    InputRequest,
    InputRequested,
    InputResolved,
    MessageAppended,
    MessageCompleted,
    MessageReceived,
    ModelFallback,
    ModelRetrying,
    QuestionRequest,
    ReasoningAppended,
    SessionCompacted,
    SessionCompleted,
    SessionEvent,
    SessionLimitRequest,
    SessionReset,
    SessionStarted,
    SessionWaiting,
    SkillLoaded,
    StepCompleted,
    StepStarted,
    TaskSettled,
    TaskStarted,
    ToolApprovalRequest,
    TurnCancelled,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
    TurnWaiting,
)

Update = TaskStatusUpdateEvent | TaskArtifactUpdateEvent

#: a task id: the session's id (``ses_`` and URL-safe base64), a colon, the turn's id
_TASK_ID = re.compile(r"^(ses_[A-Za-z0-9_-]+):(turn_(\d+))$")
#: the artifact of the agent's typed answer (``define_agent(output_schema=...)``)
OUTPUT_ARTIFACT = "output"
TERMINAL = frozenset(
    {TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED}
)


@dataclass(frozen=True)
class TaskRef:
    """Which turn of which session a task is."""

    session_id: str
    turn_id: str

    @property
    def id(self) -> str:
        return f"{self.session_id}:{self.turn_id}"

    @property
    def number(self) -> int:
        return int(self.turn_id.removeprefix("turn_"))


def parse_task_id(task_id: str) -> TaskRef:
    """The turn ``task_id`` names; ``TaskNotFoundError`` for an id eve never gives out."""
    found = _TASK_ID.match(task_id)
    if found is None:
        raise TaskNotFoundError(
            f"no task {task_id!r}: eve's task ids are '<contextId>:turn_<n>', as SendMessage "
            "returned them"
        )
    return TaskRef(session_id=found.group(1), turn_id=found.group(2))


def _timestamp(at: str) -> datetime:
    return datetime.fromisoformat(at)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.title() for word in rest)


def request_data(request: InputRequest) -> dict[str, Any]:
    """An input request as the data part of an ``input-required`` status: its fields in
    camelCase (``requestId``, ``options``, ``toolName``…), the tool's input as it was."""
    plain: dict[str, Any] = msgspec.to_builtins(request)
    return {_camel(key): value for key, value in plain.items()}


def request_prompt(request: InputRequest) -> str:
    """One line a person (or a model on the other side) can act on."""
    options = ", ".join(option.id for option in request.options)
    match request:
        case ToolApprovalRequest():
            given = msgspec.json.encode(request.input).decode()
            asked = f"May {request.tool_name} run with {given}?"
        case QuestionRequest():
            asked = request.question
        case SessionLimitRequest():
            asked = f"The session reached {request.limit} ({request.used} of {request.allowed})."
        case FormRequest():
            asked = f"{request.connection} asks: {request.message}"
            if request.schema.get("properties"):
                asked += ' To accept, answer with a data part {"optionId": "accept", "values":'
                asked += " {...}} whose values fill the request's schema."
        case _:
            assert_never(request)
    return f"{asked} Answer {options} (request {request.request_id})."


def _user_parts(event: MessageReceived) -> list[Part]:
    """The user's message as the log keeps it: its text, and its attachments that are URLs
    (the log keeps no attachment's bytes)."""
    parts = [new_text_part(event.data.message)] if event.data.message else []
    parts += [
        Part(url=a.url, media_type=a.media_type, filename=a.name or "")
        for a in event.data.attachments
        if a.url
    ]
    return parts


@dataclass
class TurnView:
    """What one turn's task is, as far as the log has been read."""

    ref: TaskRef
    state: TaskState = TaskState.TASK_STATE_SUBMITTED
    status_message: Message | None = None
    timestamp: datetime | None = None
    history: list[Message] = field(default_factory=list)
    #: artifacts by id, in the order they appeared: each step's text, then the typed output
    artifacts: dict[str, Artifact] = field(default_factory=dict)
    #: the requests the turn waits on, by request id
    pending: dict[str, InputRequest] = field(default_factory=dict)
    #: the requests it waited on when it last asked (what a retried answer answered)
    asked: list[InputRequest] = field(default_factory=list)
    #: each step's text so far, by artifact id (what the stream has sent of it)
    _texts: dict[str, str] = field(default_factory=dict)

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL

    @property
    def waiting(self) -> bool:
        return self.state == TaskState.TASK_STATE_INPUT_REQUIRED

    def task(self) -> Task:
        return Task(
            id=self.ref.id,
            context_id=self.ref.session_id,
            status=self._status(),
            artifacts=list(self.artifacts.values()),
            history=self.history,
        )

    def _status(self) -> TaskStatus:
        status = TaskStatus(state=self.state, timestamp=self.timestamp)
        if self.status_message is not None:
            status.message.CopyFrom(self.status_message)
        return status

    def _message(
        self, event: SessionEvent, parts: list[Part], role: Role = Role.ROLE_AGENT
    ) -> Message:
        return Message(
            message_id=event.meta.id,
            context_id=self.ref.session_id,
            task_id=self.ref.id,
            role=role,
            parts=parts,
        )

    def _moved(
        self, event: SessionEvent, state: TaskState, message: Message | None
    ) -> list[Update]:
        self.state, self.status_message = state, message
        self.timestamp = _timestamp(event.meta.at)
        return [
            TaskStatusUpdateEvent(
                task_id=self.ref.id, context_id=self.ref.session_id, status=self._status()
            )
        ]

    def _artifact(self, artifact: Artifact, *, append: bool, last: bool) -> list[Update]:
        return [
            TaskArtifactUpdateEvent(
                task_id=self.ref.id,
                context_id=self.ref.session_id,
                artifact=artifact,
                append=append,
                last_chunk=last,
            )
        ]

    def apply(self, event: SessionEvent) -> list[Update]:
        """Take the log's next event; return what a stream of this task sends for it."""
        data = event.data
        if data.parent is not None:
            return self._delegated(event)
        if data.turn_id != self.ref.turn_id:
            return []
        match event:
            case TurnStarted():
                return self._moved(event, TaskState.TASK_STATE_WORKING, None)
            case MessageReceived():
                self.history.append(self._message(event, _user_parts(event), Role.ROLE_USER))
                return []
            case MessageAppended() | ModelRetrying() | ModelFallback() | MessageCompleted():
                return self._text(event)
            case ActionsRequested() | ActionResult():
                return self._tool(event)
            case InputRequested():
                return self._asked(event)
            case InputResolved():
                return self._resolved(event)
            case TurnCompleted() | TurnFailed() | TurnCancelled():
                return self._ended(event)
            case (
                SessionStarted()
                | ConnectionFailed()
                | AuthorizationRequired()
                | StepStarted()
                | ReasoningAppended()
                | ActionPartial()
                | SkillLoaded()
                | TaskStarted()
                | TaskSettled()
                | StepCompleted()
                | TurnWaiting()
                | SessionWaiting()
                | SessionCompleted()
                | SessionReset()
                | SessionCompacted()
                | CompactionFailed()
                | HookFailed()
            ):
                # not in A2A's vocabulary (reasoning, progress, subagent tasks) or not the
                # task's (the session's own life): docs/channels/a2a.md lists them
                return []
            case _:
                assert_never(event)

    def _tool(self, event: ActionsRequested | ActionResult) -> list[Update]:
        """A tool call and its result: a working status whose message carries them as data."""
        match event:
            case ActionsRequested():
                calls = [
                    {"callId": a.call_id, "name": a.name, "input": a.input}
                    for a in event.data.actions
                ]
                data: dict[str, Any] = {"toolCalls": calls}
            case ActionResult():
                result = event.data
                data = {
                    "toolResult": {
                        "callId": result.call_id,
                        "name": result.name,
                        "status": result.status,
                        "output": result.output,
                    }
                }
            case _:
                assert_never(event)
        if self.waiting:
            return []  # a call run beside one that waits: the question stays the status
        message = self._message(event, [new_data_part(data)])
        return self._moved(event, TaskState.TASK_STATE_WORKING, message)

    # --- text ------------------------------------------------------------------------------

    def _text(
        self, event: MessageAppended | ModelRetrying | ModelFallback | MessageCompleted
    ) -> list[Update]:
        """Each step's text is an artifact (``text-<step>``), streamed in appended chunks."""
        step = event.data.step_index
        match event:
            case MessageAppended():
                return self._text_delta(step, event.data.message_delta)
            case ModelRetrying() | ModelFallback():
                # what the step streamed is void: its text starts again
                return self._text_set(step, "", last=False)
            case MessageCompleted():
                return self._text_done(step, event.data.message)
            case _:
                assert_never(event)

    @staticmethod
    def _text_id(step: int | None) -> str:
        return f"text-{step or 0}"

    def _text_delta(self, step: int | None, delta: str) -> list[Update]:
        artifact_id = self._text_id(step)
        so_far = self._texts.get(artifact_id, "")
        self._texts[artifact_id] = so_far + delta
        self.artifacts[artifact_id] = Artifact(
            artifact_id=artifact_id, name="text", parts=[new_text_part(so_far + delta)]
        )
        chunk = Artifact(artifact_id=artifact_id, name="text", parts=[new_text_part(delta)])
        return self._artifact(chunk, append=bool(so_far), last=False)

    def _text_set(self, step: int | None, text: str, *, last: bool) -> list[Update]:
        artifact_id = self._text_id(step)
        self._texts[artifact_id] = text
        artifact = Artifact(artifact_id=artifact_id, name="text", parts=[new_text_part(text)])
        self.artifacts[artifact_id] = artifact
        return self._artifact(artifact, append=False, last=last)

    def _text_done(self, step: int | None, text: str) -> list[Update]:
        artifact_id = self._text_id(step)
        if self._texts.get(artifact_id) != text:
            # not streamed (or not all of it): the whole text replaces what was sent
            return self._text_set(step, text, last=True)
        ending = Artifact(artifact_id=artifact_id, name="text", parts=[new_text_part("")])
        return self._artifact(ending, append=True, last=True)

    # --- people and the end ----------------------------------------------------------------

    def _delegated(self, event: SessionEvent) -> list[Update]:
        """A subagent's event: its own session tells its story, but its requests are asked
        and answered through the root session, so they are this task's while it runs (a
        session runs one turn at a time: what comes between its start and end is its)."""
        running = self.state != TaskState.TASK_STATE_SUBMITTED and not self.terminal
        match event:
            case InputRequested() if running:
                return self._asked(event)
            case InputResolved() if running:
                return self._resolved(event)
            case _:
                return []

    def _asked(self, event: InputRequested) -> list[Update]:
        for request in event.data.requests:
            self.pending[request.request_id] = request
        self.asked = list(self.pending.values())
        return self._waiting(event)

    def _resolved(self, event: InputResolved) -> list[Update]:
        if self.pending.pop(event.data.request_id, None) is None:
            return []
        if self.pending:
            return self._waiting(event)  # what still waits
        return self._moved(event, TaskState.TASK_STATE_WORKING, None)

    def _waiting(self, event: SessionEvent) -> list[Update]:
        prompt = "\n".join(request_prompt(r) for r in self.pending.values())
        requests = [request_data(r) for r in self.pending.values()]
        parts = [new_text_part(prompt), new_data_part({"inputRequests": requests})]
        return self._moved(event, TaskState.TASK_STATE_INPUT_REQUIRED, self._message(event, parts))

    def _ended(self, event: TurnCompleted | TurnFailed | TurnCancelled) -> list[Update]:
        match event:
            case TurnCompleted():
                return self._completed(event)
            case TurnFailed():
                message = self._message(event, [new_text_part(event.data.error)])
                return self._moved(event, TaskState.TASK_STATE_FAILED, message)
            case TurnCancelled():
                message = self._message(event, [new_text_part(event.data.reason)])
                return self._moved(event, TaskState.TASK_STATE_CANCELED, message)
            case _:
                assert_never(event)

    def _completed(self, event: TurnCompleted) -> list[Update]:
        updates: list[Update] = []
        if event.data.output is not None:
            artifact = Artifact(
                artifact_id=OUTPUT_ARTIFACT,
                name=OUTPUT_ARTIFACT,
                parts=[new_data_part(event.data.output, "application/json")],
            )
            self.artifacts[OUTPUT_ARTIFACT] = artifact
            updates += self._artifact(artifact, append=False, last=True)
        texts = [self._texts[k] for k in self.artifacts if k in self._texts]
        answer = next((text for text in reversed(texts) if text), "")
        message = self._message(event, [new_text_part(answer)]) if answer else None
        if message is not None:
            self.history.append(message)
        updates += self._moved(event, TaskState.TASK_STATE_COMPLETED, message)
        updates[-1].metadata.update({"stopReason": event.data.stop_reason})
        return updates
