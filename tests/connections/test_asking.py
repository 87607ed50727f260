"""The pieces of a server's requests that need no server: the restricted form schema and a
terminal field's value (the call clock that stops while a person answers: test_clock)."""

from __future__ import annotations

from typing import Any

import pytest

from eve.cli.form_prompt import field_value
from eve.connections.asking import restricted_schema_problem
from eve.errors import FormAnswerInvalid
from eve.runtime.server_asks import check_form_answer, with_defaults


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"type": "object", "properties": {"a": {"type": "string"}}}, None),
        (
            {"type": "object", "properties": {"a": {"type": "array", "items": {"enum": ["x"]}}}},
            None,
        ),
        ({"type": "array"}, "the schema's type must be 'object'"),
        (
            {"type": "object", "properties": {"a": {"type": "object"}}},
            "field 'a' has type 'object'",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}},
            "field 'a' is an array that is not a list of enum strings",
        ),
    ],
)
def test_only_the_specs_restricted_schema_is_shown(
    schema: dict[str, Any], problem: str | None
) -> None:
    found = restricted_schema_problem(schema)
    assert found == problem if problem is None else (found or "").startswith(problem)


@pytest.mark.parametrize(
    ("field", "line", "value"),
    [
        ({"type": "integer"}, " 2 ", 2),
        ({"type": "number"}, "2.5", 2.5),
        ({"type": "boolean"}, "yes", True),
        ({"type": "boolean"}, "no", False),
        ({"type": "string", "enum": ["single", "double"]}, "double", "double"),
        ({"type": "string", "oneOf": [{"const": "a"}, {"const": "b"}]}, "b", "b"),
        ({"type": "array", "items": {"enum": ["x", "y", "z"]}}, "x, z", ["x", "z"]),
        ({"type": "string"}, " Ada ", "Ada"),
    ],
)
def test_a_terminal_line_becomes_the_fields_value(
    field: dict[str, Any], line: str, value: Any
) -> None:
    assert field_value(field, line) == value


@pytest.mark.parametrize(
    ("field", "line", "why"),
    [
        ({"type": "integer"}, "two", "not an integer: 'two'"),
        ({"type": "boolean"}, "perhaps", "answer yes or no"),
        ({"type": "string", "enum": ["single"]}, "triple", "answer one of: single"),
        ({"type": "array", "items": {"enum": ["x"]}}, "x, w", "not among the choices: w"),
    ],
)
def test_a_line_that_is_no_value_says_why(field: dict[str, Any], line: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        field_value(field, line)


#: a form whose required fields both have defaults (SEP-1034)
DEFAULTED = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "Ada"},
        "count": {"type": "integer", "default": 3},
    },
    "required": ["name", "count"],
}


def test_a_field_left_out_is_answered_with_its_default() -> None:
    assert with_defaults(DEFAULTED, {"name": "Bo"}) == {"name": "Bo", "count": 3}
    check_form_answer("in_1", DEFAULTED, "accept", {})  # shown pre-filled: nothing to type
    with pytest.raises(FormAnswerInvalid, match="count"):
        check_form_answer("in_1", DEFAULTED, "accept", {"count": "three"})
