"""A quick yes for the common tool input schema: a flat object of typed fields.

``jsonschema`` walks a schema through a validator per keyword and per property, which for a
three-field MCP tool costs more than the rest of eve's work on the call (bench/mcp_call).
Most tools' schemas (the ones the MCP SDKs generate from a function's signature) are a
flat object whose properties have a type and only annotations besides. For those, this
module builds a plain check that says whether an input is valid. It only ever answers
"valid" when ``jsonschema`` would too; every other schema, and every input it does not
accept, goes to ``jsonschema``, which also writes the messages.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

#: keywords that describe and constrain nothing an input must satisfy
_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$comment", "deprecated", "readOnly"}
)
_TOP = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties", "$schema"}


def _is_integer(value: Any) -> bool:
    # a bool is no number in JSON Schema, though Python's is; 2.0 is an integer for some
    # drafts and not for others, so a float is left to jsonschema
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda value: isinstance(value, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda value: isinstance(value, bool),
    "null": lambda value: value is None,
    "array": lambda value: isinstance(value, list),
    "object": lambda value: isinstance(value, dict),
}

FlatCheck = Callable[[Mapping[str, Any]], bool]


def flat_check(schema: Mapping[str, Any]) -> FlatCheck | None:
    """The quick check of ``schema``, or None when it is not a flat object of typed fields
    (then only ``jsonschema`` can tell)."""
    if schema.get("type") != "object" or not set(schema) <= _TOP:
        return None
    properties, required = schema.get("properties", {}), schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(properties, dict) or not isinstance(extra, bool):
        return None
    if not isinstance(required, list) or not all(isinstance(name, str) for name in required):
        return None
    types: dict[str, Callable[[Any], bool]] = {}
    for name, field in properties.items():
        kind = field.get("type") if isinstance(field, dict) else None
        if (
            not isinstance(kind, str)
            or kind not in _TYPES
            or not set(field) <= _ANNOTATIONS | {"type"}
        ):
            return None
        types[name] = _TYPES[kind]
    needed = tuple(required)

    def check(data: Mapping[str, Any]) -> bool:
        for name in needed:
            if name not in data:
                return False
        for name, value in data.items():
            fits = types.get(name)
            if fits is None:
                if not extra:
                    return False
            elif not fits(value):
                return False
        return True

    return check
