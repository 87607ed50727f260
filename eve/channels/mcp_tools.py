"""The ``mcp`` channel's four tools as a caller sees them: their arguments (validated once,
at the way in), their JSON Schemas and descriptions. The TypeScript eve's names."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from eve.channels.mcp_turns import TurnView, turn_number
from eve.errors import IdempotencyKeyInvalid, InvalidBody

#: a caller's ``idempotency_key`` is stored under a prefix naming the channel: it stays
#: within the session store's 255 characters
MAX_KEY_CHARS = 200

Seconds = Annotated[float, msgspec.Meta(ge=0, description="seconds to wait for the turn to settle")]
Key = Annotated[
    str,
    msgspec.Meta(
        description="the same key (and arguments) again does nothing twice: it answers the "
        "turn the first call started (a UUID is fine)",
    ),
]
Message = Annotated[str, msgspec.Meta(min_length=1, description="the user's message")]
SessionId = Annotated[str, msgspec.Meta(description="the session, from agent_start's answer")]


class _Args(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class Answer(_Args, frozen=True, kw_only=True):
    """One person's answer to a request the turn waits on."""

    request_id: str
    #: one of the request's options (``approve`` or ``deny`` for a tool's approval)
    option_id: str


class StartArgs(_Args, frozen=True, kw_only=True):
    message: Message
    wait: Seconds | None = None
    idempotency_key: Key | None = None


class UpdateArgs(_Args, frozen=True, kw_only=True):
    session_id: SessionId
    message: Message | None = None
    answers: Annotated[list[Answer], msgspec.Meta(min_length=1)] | None = None
    wait: Seconds | None = None
    idempotency_key: Key | None = None

    def __post_init__(self) -> None:
        if (self.message is None) == (self.answers is None):
            raise ValueError("send either `message` (a follow-up) or `answers`, not both")


class GetArgs(_Args, frozen=True, kw_only=True):
    session_id: SessionId
    turn_id: Annotated[str, msgspec.Meta(description="turn_<n>; the latest if left out")] | None = (
        None
    )
    wait: Seconds | None = None


class CancelArgs(_Args, frozen=True, kw_only=True):
    session_id: SessionId
    wait: Seconds | None = None


ToolArgs = StartArgs | UpdateArgs | GetArgs | CancelArgs

#: each tool's name, its arguments' type, and what it does, for the caller's model
TOOLS: dict[str, tuple[type[ToolArgs], str]] = {
    "agent_start": (
        StartArgs,
        "Start a new session with the agent and send it a first message. Waits up to `wait` "
        "seconds for the turn to settle and answers its status: `completed` with the agent's "
        "`answer`, `waiting` with `requests` a person must answer (agent_update), or "
        "`running` (call agent_get to read it later). Progress is notified while it waits.",
    ),
    "agent_update": (
        UpdateArgs,
        "Continue a session: send a follow-up `message` (a new turn, queued behind a running "
        "one), or `answers` to the requests a waiting turn asks (approve or deny a tool call, "
        "pick a question's option). Answers the turn as agent_start does.",
    ),
    "agent_get": (
        GetArgs,
        "Read a turn of a session (the latest if `turn_id` is left out): its status, the "
        "agent's answer, its tool calls and the requests it waits on. With `wait`, waits for "
        "a running turn to settle first.",
    ),
    "agent_cancel": (
        CancelArgs,
        "Stop the session's running (or waiting) turn; queued turns stay queued. Answers the "
        "turn once it has stopped, waiting up to `wait` seconds.",
    ),
}


def decode_args(name: str, arguments: dict[str, Any] | None) -> ToolArgs:
    """``arguments`` as ``name``'s type; ``InvalidBody`` says what is wrong with them."""
    kind, _ = TOOLS[name]
    try:
        args: ToolArgs = msgspec.convert(arguments or {}, kind)
    except msgspec.ValidationError as error:
        raise InvalidBody(f"{name}: {error}") from None
    if isinstance(args, GetArgs) and args.turn_id is not None:
        turn_number(args.turn_id)  # refuses an id that cannot be a turn's
    key = getattr(args, "idempotency_key", None)
    if key is not None and not (
        0 < len(key) <= MAX_KEY_CHARS and key.isascii() and key.isprintable()
    ):
        raise IdempotencyKeyInvalid(
            f"{name}: idempotency_key must be 1 to {MAX_KEY_CHARS} printable ASCII characters "
            "(a UUID is fine)",
            limit=MAX_KEY_CHARS,
        )
    return args


def object_schema(kind: type[Any]) -> dict[str, Any]:
    """``kind``'s JSON Schema with ``type: object`` at its root, as MCP wants a tool's
    input and output schemas (msgspec puts the root under ``$defs``)."""
    schema = msgspec.json.schema(kind)
    defs: dict[str, Any] = schema.get("$defs", {})
    root = defs[schema["$ref"].rsplit("/", 1)[-1]]
    return {**root, "$defs": defs}


OUTPUT_SCHEMA = object_schema(TurnView)
