"""The quick check of a flat tool schema says yes only where jsonschema does, and leaves
every other schema to it."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from eve.errors import ToolInputInvalid
from eve.runtime.flat_schema import flat_check
from eve.runtime.validation import JsonSchemaValidator

UNITS = {
    "type": "object",
    "title": "convert_unitsArguments",
    "properties": {
        "value": {"type": "number", "title": "Value"},
        "from_unit": {"type": "string"},
        "count": {"type": "integer", "default": 1},
        "exact": {"type": "boolean"},
    },
    "required": ["value", "from_unit"],
}
CLOSED = {**UNITS, "additionalProperties": False}
INPUTS: list[dict[str, Any]] = [
    {"value": 2, "from_unit": "ft"},
    {"value": 2.5, "from_unit": "ft", "count": 3, "exact": True},
    {"value": 2, "from_unit": "ft", "other": 1},
    {"value": True, "from_unit": "ft"},
    {"value": 2, "from_unit": "ft", "count": 2.0},
    {"value": 2, "from_unit": "ft", "count": False},
    {"value": "2", "from_unit": "ft"},
    {"from_unit": "ft"},
    {"value": None, "from_unit": "ft"},
]


@pytest.mark.parametrize("schema", [UNITS, CLOSED])
@pytest.mark.parametrize("data", INPUTS)
def test_a_quick_yes_is_jsonschemas_yes(schema: dict[str, Any], data: dict[str, Any]) -> None:
    check = flat_check(schema)
    assert check is not None
    if check(data):
        assert jsonschema.Draft202012Validator(schema).is_valid(data)
    # and the validator's answer is jsonschema's either way
    valid = jsonschema.Draft202012Validator(schema).is_valid(data)
    if valid:
        assert JsonSchemaValidator(schema).validate(data) is data
    else:
        with pytest.raises(ToolInputInvalid):
            JsonSchemaValidator(schema).validate(data)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "string", "minLength": 2}}},
        {"type": "object", "properties": {"a": {"enum": ["x"]}}},
        {"type": "object", "properties": {"a": {"type": ["string", "null"]}}},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "object", "anyOf": [{"required": ["a"]}]},
        {"type": "array"},
    ],
)
def test_anything_else_is_left_to_jsonschema(schema: dict[str, Any]) -> None:
    assert flat_check(schema) is None
