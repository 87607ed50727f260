"""Filling in an MCP server's form at a terminal prompt (``eve dev``, ``eve run``): one
line per field.

The form's fields are the spec's restricted schema, so each line converts by its field's
type: a number, an integer, yes/no for a boolean, one of the listed values for an enum, a
comma-separated list for a multi-select. The session checks the values again when it takes
the answer (``FormAnswerInvalid``); ``eve run``, with no session, checks them here.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import click

from eve._cancellation import CancelSignal, unless_cancelled
from eve.cli.stdin_lines import StdinLines
from eve.errors import FormAnswerInvalid
from eve.runtime.server_asks import FORM_ACTIONS, FormAnswer, FormAsk, check_form_answer

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
            raise ValueError(
                f"not {'an' if kind == 'integer' else 'a'} {kind}: {text!r}"
            ) from error
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


async def fill(
    connection: str, message: str, schema: dict[str, Any], ask: Ask, warn: Callable[[str], None]
) -> tuple[str, Any]:
    """The option chosen for the form (``message`` and the fields of ``schema``) and, for
    ``accept``, the values of its fields; ``("", None)`` when input ended or the turn is
    being cancelled."""
    actions = "/".join(FORM_ACTIONS)
    while True:
        said = await ask(f"  {connection} asks: {message} [{actions}] ")
        if said is None:
            return "", None
        if said.strip() in FORM_ACTIONS:
            break
        warn(f"  answer one of: {', '.join(FORM_ACTIONS)}")
    option = said.strip()
    fields: dict[str, Any] = schema.get("properties", {})
    if option != "accept" or not fields:
        return option, None
    required = set(schema.get("required", []))
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


def _warn(text: str) -> None:
    click.echo(text, err=True)


@dataclass(frozen=True, kw_only=True)
class TerminalForms:
    """``eve run``'s ``Forms``: asked on the terminal (without one, each answer is a line of
    standard input, as for a workflow tool's question); a Ctrl-C or the input's end
    cancels the form."""

    cancel: CancelSignal
    lines: StdinLines

    async def line(self, prompt: str) -> str | None:
        if sys.stdin.isatty():
            click.echo(prompt, nl=False, err=True)
        return await unless_cancelled(self.cancel, self.lines.line())

    async def ask(self, form: FormAsk) -> FormAnswer:
        while True:
            option, values = await fill(
                form.connection, form.message, form.schema, self.line, _warn
            )
            if option not in FORM_ACTIONS:
                return FormAnswer(action="cancel")
            try:
                check_form_answer(form.call_id, form.schema, option, values)
            except FormAnswerInvalid as error:
                _warn(f"  {error.problems}")
                continue
            return FormAnswer(action=option, values=values)
