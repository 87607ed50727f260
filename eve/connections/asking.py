"""A server's requests to eve while it runs a tool call: elicitation and sampling.

One connection serves every session of the worker, and the request names no call (over
stdio nothing on the wire relates it to one), so it goes to the call running on that
connection: the pool registers each call with its turn's ``CallAsks`` while it is out
(``RunningCalls``). With no call running, or several at once (eve cannot tell which one
asks), the request is refused with a JSON-RPC error saying so. While a person is asked,
the call's own timeout stops (``connections.clock``): ``call_timeout_seconds`` measures the
server, not the person.

- Elicitation (``elicitation/create``): a form's fields must be the spec's restricted
  schema (a flat object of string, number, integer, boolean and enum properties), else
  ``-32602``. URL mode is a form with no fields whose message carries the URL: ``accept``
  says the person opened it. The answer is the person's ``accept`` (with values),
  ``decline`` or ``cancel``.
- Sampling (``sampling/createMessage``): only text messages; refused with the spec's
  ``-1`` ("User rejected sampling request") when the connection's policy or a person says
  no; answered by the agent's own model, its tokens counted in the turn.
"""

from __future__ import annotations

from typing import Any, Literal

import mcp_types
from mcp.client.session import ClientRequestContext

from eve.connections.clock import Deadline
from eve.runtime.server_asks import (
    CallAsks,
    SamplingAsk,
    SamplingPolicy,
    SamplingRefused,
    with_defaults,
)

#: what the spec's examples answer a sampling request the user rejected
USER_REJECTED = -1
#: the JSON Schema types a form field may have (the spec's restricted schema)
_FIELD_TYPES = {"string", "number", "integer", "boolean", "array"}


class RunningCall:
    """A call out on a connection: what its turn offers the server, and its clock."""

    __slots__ = ("asks", "clock")

    def __init__(self, asks: CallAsks | None, clock: Deadline) -> None:
        self.asks = asks
        self.clock = clock


class RunningCalls:
    """One connection's calls that are out, and its answers to the server's requests."""

    def __init__(self, connection: str, *, policy: SamplingPolicy, max_tokens: int) -> None:
        self.connection = connection
        self.policy = policy
        self.max_tokens = max_tokens
        self.calls: list[RunningCall] = []

    def _asker(self, what: str) -> tuple[CallAsks, Deadline] | mcp_types.ErrorData:
        """The one call that can answer ``what``, or the error the server gets."""
        asks = self.calls[0].asks if len(self.calls) == 1 else None
        if asks is None:
            why = (
                f"{len(self.calls)} tool calls run on the connection at once, and eve cannot "
                "tell which one asks"
                if len(self.calls) > 1
                else "no tool call of a turn is running on the connection"
            )
            return mcp_types.ErrorData(
                code=mcp_types.INVALID_REQUEST, message=f"eve cannot answer {what}: {why}"
            )
        return asks, self.calls[0].clock

    async def elicit(
        self, context: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult | mcp_types.ErrorData:
        found = self._asker("this elicitation")
        if isinstance(found, mcp_types.ErrorData):
            return found
        asks, clock = found
        if isinstance(params, mcp_types.ElicitRequestURLParams):
            message, schema = f"{params.message}\n\nOpen: {params.url}", {}
        else:
            problem = restricted_schema_problem(params.requested_schema)
            if problem is not None:
                return mcp_types.ErrorData(
                    code=mcp_types.INVALID_PARAMS,
                    message=f"eve shows only flat forms of primitive fields: {problem}",
                )
            message, schema = params.message, dict(params.requested_schema)
        with clock.paused():
            answer = await asks.elicit(self.connection, message, schema)
        accepted = answer.action == "accept" and schema
        content = with_defaults(schema, answer.values or {}) if accepted else None
        return mcp_types.ElicitResult(action=answer.action, content=content)

    async def sample(
        self, context: ClientRequestContext, params: mcp_types.CreateMessageRequestParams
    ) -> mcp_types.CreateMessageResult | mcp_types.ErrorData:
        found = self._asker("this sampling request")
        if isinstance(found, mcp_types.ErrorData):
            return found
        asks, clock = found
        if params.tools:
            return _rejected("eve samples text only, without tools")
        messages = _text_messages(params.messages)
        if isinstance(messages, str):
            return _rejected(messages)
        ask = SamplingAsk(
            connection=self.connection,
            system=params.system_prompt,
            messages=messages,
            max_tokens=max(1, min(params.max_tokens, self.max_tokens)),
            policy=self.policy,
        )
        # a policy of "ask" waits on a person: off the call's clock
        with clock.paused():
            sampled = await asks.sample(ask)
        if isinstance(sampled, SamplingRefused):
            return _rejected(sampled.reason)
        return mcp_types.CreateMessageResult(
            role="assistant",
            content=mcp_types.TextContent(text=sampled.text),
            model=sampled.model,
            stop_reason=sampled.stop_reason,
        )

    def session_options(self) -> dict[str, Any]:
        """The ``ClientSession`` callbacks: elicitation always (the turn decides who
        answers), sampling only when the policy allows it, so a server is told the
        capability only when it may use it."""
        options: dict[str, Any] = {"elicitation_callback": self.elicit}
        if self.policy != "never":
            options["sampling_callback"] = self.sample
        return options


def _rejected(reason: str) -> mcp_types.ErrorData:
    return mcp_types.ErrorData(
        code=USER_REJECTED, message=f"User rejected sampling request: {reason}"
    )


def _text_messages(
    given: list[mcp_types.SamplingMessage],
) -> list[tuple[Literal["user", "assistant"], str]] | str:
    """The conversation as text, or why it cannot be (an image, audio or a tool result)."""
    messages: list[tuple[Literal["user", "assistant"], str]] = []
    for message in given:
        blocks = message.content if isinstance(message.content, list) else [message.content]
        texts = []
        for block in blocks:
            if not isinstance(block, mcp_types.TextContent):
                return f"eve samples text only, and a message holds {block.type} content"
            texts.append(block.text)
        messages.append((message.role, "\n".join(texts)))
    if not messages or messages[-1][0] != "user":
        return "the conversation must end with a user message"
    return messages


def restricted_schema_problem(schema: dict[str, Any]) -> str | None:
    """Why ``schema`` is not the spec's restricted form schema, or None when it is."""
    if schema.get("type") != "object":
        return "the schema's type must be 'object'"
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        return "properties must be an object"
    for name, field in properties.items():
        kind = field.get("type") if isinstance(field, dict) else None
        if kind not in _FIELD_TYPES:
            return f"field {name!r} has type {kind!r} (string, number, integer, boolean or enum)"
        if kind == "array" and not _is_multi_select(field):
            return f"field {name!r} is an array that is not a list of enum strings"
    return None


def _is_multi_select(field: dict[str, Any]) -> bool:
    items = field.get("items")
    return isinstance(items, dict) and ("enum" in items or "anyOf" in items)
