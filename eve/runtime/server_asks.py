"""What an MCP server may ask of the turn whose tool call it is running: a person, through a
form (elicitation), or the agent's model (sampling).

The server asks on its connection, which every session of the worker shares, so the pool
ties the request to the call it belongs to (``connections.asking``) and hands it to that
call's ``CallAsks``: the tool runner sets one for each call it runs, through this context
variable (as ``partials`` does for progress). The turn decides how a form is answered
(``Forms``: a durable session parks on it, ``eve run`` asks at the terminal) and which
model answers; this module holds only the values that cross between them, so the
connection side needs nothing of the execution side.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from eve.costs import Spend
from eve.errors import FormAnswerInvalid, ToolInputInvalid
from eve.runtime.validation import JsonSchemaValidator

#: how a person answered a form: ``accept`` (with values), ``decline`` (said no),
#: ``cancel`` (dismissed it, or the turn was cancelled)
FormAction = Literal["accept", "decline", "cancel"]
FORM_ACTIONS: tuple[FormAction, ...] = ("accept", "decline", "cancel")
#: whether a server may use the agent's model: not at all, once a person allows each
#: request, or always (bounded by ``sampling_max_tokens``)
SamplingPolicy = Literal["never", "ask", "always"]


@dataclass(frozen=True, kw_only=True)
class FormAsk:
    """A form a server asks a person to fill in, while it runs ``call_id``."""

    call_id: str
    tool_name: str
    connection: str
    message: str
    #: a flat JSON Schema object: its properties are the fields (none: a yes/no question)
    schema: dict[str, Any]
    #: ``sampling``: the server asks to use the agent's model, and ``accept`` allows it
    purpose: Literal["elicitation", "sampling"] = "elicitation"


@dataclass(frozen=True, kw_only=True)
class FormAnswer:
    action: FormAction
    #: the fields' values, for ``accept`` (checked against the form's schema)
    values: dict[str, Any] | None = None


class Forms(Protocol):
    """Where a turn's forms are answered."""

    async def ask(self, form: FormAsk) -> FormAnswer:
        """The person's answer; ``cancel`` when the turn is cancelled first."""
        ...


@dataclass(frozen=True, kw_only=True)
class SentCall:
    """An MCP call an earlier run of the turn sent (before the process stopped)."""

    #: the server's task, when the call ran as one: it can be read again
    task_id: str | None = None


class SentCalls(Protocol):
    """What a durable turn records of its MCP calls, so a run again after a restart sends
    none twice (``sessions.mcp_calls``)."""

    async def sent(self, call_id: str) -> SentCall | None:
        """The record of ``call_id``, if an earlier run of the turn sent it."""
        ...

    async def record(self, call_id: str, *, task_id: str | None = None) -> None:
        """``call_id`` is being sent (``task_id``: it runs as that task on the server)."""
        ...


@dataclass(frozen=True, kw_only=True)
class SamplingAsk:
    """A server's ``sampling/createMessage``, as text."""

    connection: str
    system: str | None
    #: the conversation, in order: ``("user" | "assistant", text)``
    messages: list[tuple[Literal["user", "assistant"], str]]
    #: the tokens the answer may use (the server's ask, bounded by the connection)
    max_tokens: int
    policy: SamplingPolicy


@dataclass(frozen=True, kw_only=True)
class Sampled:
    """The model's answer to a sampling request."""

    text: str
    model: str
    #: ``endTurn`` or ``maxTokens``, as MCP names them
    stop_reason: str


@dataclass(frozen=True, kw_only=True)
class SamplingRefused:
    """The policy or a person refused a sampling request (the server reads ``reason``)."""

    reason: str


class CallAsks(Protocol):
    """What a running tool call offers the server that runs it."""

    async def elicit(self, connection: str, message: str, schema: dict[str, Any]) -> FormAnswer:
        """Ask a person to fill in ``schema``'s fields; ``cancel`` when no one can."""
        ...

    async def sample(self, ask: SamplingAsk) -> Sampled | SamplingRefused:
        """The agent's model's answer, or why it is not allowed."""
        ...

    async def sent_before(self) -> SentCall | None:
        """The call as an earlier run of the turn sent it, if one did (``SentCalls``)."""
        ...

    async def sending(self, *, task_id: str | None = None) -> None:
        """The call is being sent (``task_id``: it runs as that task): recorded where the
        turn is durable."""
        ...

    @property
    def spent(self) -> Spend:
        """What the call's sampling requests spent so far."""
        ...

    @property
    def cancelled(self) -> bool:
        """Whether the call's turn was cancelled (a task the call runs is cancelled too)."""
        ...


def with_defaults(schema: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with each field the person left out that has a ``default`` filled with it:
    a form shows its fields pre-filled with their defaults (MCP elicitation, SEP-1034), so
    leaving one is answering it with the default."""
    properties: dict[str, Any] = schema.get("properties") or {}
    defaults = {
        name: field["default"]
        for name, field in properties.items()
        if isinstance(field, dict) and "default" in field
    }
    return {**defaults, **values}


def check_form_answer(request_id: str, schema: dict[str, Any], option: str, values: Any) -> None:
    """``FormAnswerInvalid`` unless ``values`` (with the fields' defaults) fill ``schema``
    for an ``accept``."""
    if option != "accept" or not schema.get("properties"):
        return
    if not isinstance(values, dict):
        raise FormAnswerInvalid(
            f"input request {request_id} is a form: accept it with its values",
            request_id=request_id,
            problems="no values",
        )
    try:
        JsonSchemaValidator(schema).validate(with_defaults(schema, values))
    except ToolInputInvalid as error:
        problems = str(error).removeprefix("invalid input: ")
        raise FormAnswerInvalid(
            f"input request {request_id}: the values do not fit the form: {problems}",
            request_id=request_id,
            problems=problems,
        ) from None


running_call_asks: ContextVar[CallAsks | None] = ContextVar("running_call_asks", default=None)
