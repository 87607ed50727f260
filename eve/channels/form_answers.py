"""A form (an MCP server's elicitation) through a text-only channel: how it is shown, and the
structured reply that answers it with values.

A reply in words can only name an option, and a form's ``accept`` needs the values of its
fields. So a text channel (the OpenAI-compatible one; docs/channels/openai.md) also takes a
user message that is one JSON object, ``{"optionId": "accept", "values": {<field>: <value>}}``,
as the answer. The values are checked against the form's JSON Schema where eve takes the
answer (``SessionService.respond``: ``FormAnswerInvalid``, naming the fields at fault).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from eve.errors import ChannelRequestInvalid
from eve.events import FormRequest

#: the keys of a structured answer
_KEYS = {"optionId", "values"}
_SHAPE = '{"optionId": "<option>", "values": {"<field>": <value>, ...}}'


@dataclass(frozen=True, kw_only=True)
class StructuredAnswer:
    """A reply that is a JSON object naming an option, with a form's values."""

    option_id: str
    values: dict[str, Any] | None


def structured_answer(text: str, *, param: str) -> StructuredAnswer | None:
    """``text`` as a structured answer when it is a JSON object with ``optionId``; None for
    any other text (an option's name, or a message). A malformed one is refused, naming the
    shape, rather than taken for a message."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return None
    try:
        data = json.loads(stripped)
    except ValueError:
        return None
    if not isinstance(data, dict) or "optionId" not in data:
        return None
    option, values = data["optionId"], data.get("values")
    if (
        set(data) - _KEYS
        or not isinstance(option, str)
        or (values is not None and not isinstance(values, dict))
    ):
        raise ChannelRequestInvalid(
            f"a structured answer is {_SHAPE}: optionId a string, values an object, "
            f"nothing else; got keys {sorted(data)}",
            param=param,
        )
    return StructuredAnswer(option_id=option, values=values)


def form_prompt(request: FormRequest) -> str:
    """What a text channel shows for a form: the server's message, and how to fill it in."""
    asked = f"{request.connection} asks: {request.message}"
    fields = request.schema.get("properties") or {}
    if not fields:
        return asked
    required = set(request.schema.get("required") or [])
    listed = ", ".join(
        f"{name} ({_kind(field)}{'' if name in required else ', optional'})"
        for name, field in fields.items()
    )
    example = json.dumps({"optionId": "accept", "values": dict.fromkeys(fields, "...")})
    return f"{asked} Its fields: {listed}. To accept, reply with the JSON {example}, filled in."


def _kind(field: Any) -> str:
    if not isinstance(field, dict):
        return "any"
    if "enum" in field:
        return "one of " + "|".join(str(value) for value in field["enum"])
    return str(field.get("type", "any"))
