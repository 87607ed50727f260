"""Filling in an MCP server's form at a terminal prompt (``eve dev``): one line per field.

The form's fields are the spec's restricted schema, so each line converts by its field's
type: a number, an integer, yes/no for a boolean, one of the listed values for an enum, a
comma-separated list for a multi-select. The session checks the values again when it takes
the answer (``FormAnswerInvalid``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from eve.events import FormRequest
from eve.runtime.server_asks import FORM_ACTIONS

#: asks one line at the prompt; None: input ended, or the turn is being cancelled
Ask = Callable[[str], Awaitable[str | None]]


def field_value(field: dict[str, Any], line: str) -> Any:
    """``line`` as a value of ``field`` (a property of the form's schema); ``ValueError``
    saying why it is none (the prompt asks again)."""
    text = line.strip()
    kind = field.get("type")
    choices = _choices(field)
    try:
        if kind == "boolean":
            if text.lower() not in ("y", "yes", "true", "n", "no", "false"):
                raise ValueError("answer yes or no")
            return text.lower() in ("y", "yes", "true")
        if kind == "integer":
            return int(text)
        if kind == "number":
            return float(text)
    except ValueError as error:
        if kind in ("integer", "number"):
            raise ValueError(f"not a {kind}: {text!r}") from error
        raise
    if kind == "array":
        picked = [part.strip() for part in text.split(",") if part.strip()]
        wrong = [value for value in picked if value not in _choices(field.get("items", {}))]
        if wrong:
            raise ValueError(f"not among the choices: {', '.join(wrong)}")
        return picked
    if choices and text not in choices:
        raise ValueError(f"answer one of: {', '.join(choices)}")
    return text


def _choices(field: dict[str, Any]) -> list[str]:
    if "enum" in field:
        return [str(value) for value in field["enum"]]
    return [str(option.get("const")) for option in field.get("oneOf", field.get("anyOf", []))]


async def fill(request: FormRequest, ask: Ask, warn: Callable[[str], None]) -> tuple[str, Any]:
    """The option chosen for ``request`` and, for ``accept``, the values of its fields;
    ``("", None)`` when input ended or the turn is being cancelled."""
    actions = "/".join(FORM_ACTIONS)
    while True:
        said = await ask(f"  {request.connection} asks: {request.message} [{actions}] ")
        if said is None:
            return "", None
        if said.strip() in FORM_ACTIONS:
            break
        warn(f"  answer one of: {', '.join(FORM_ACTIONS)}")
    option = said.strip()
    fields: dict[str, Any] = request.schema.get("properties", {})
    if option != "accept" or not fields:
        return option, None
    required = set(request.schema.get("required", []))
    values: dict[str, Any] = {}
    for name, field in fields.items():
        label = field.get("title") or name
        hint = "/".join(_choices(field)) or field.get("type", "")
        while True:
            line = await ask(f"    {label} ({hint}){'' if name in required else ' [skip]'}: ")
            if line is None:
                return "", None
            if not line.strip() and name not in required:
                break
            try:
                values[name] = field_value(field, line)
                break
            except ValueError as error:
                warn(f"    {error}")
    return option, values
