"""Synthesize a value that satisfies a JSON Schema, for the offline model's tool calls."""

from __future__ import annotations

from typing import Any


def _number(schema: dict[str, Any], integer: bool) -> int | float:
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    value: float = 1
    if low is not None:
        value = low + (1 if "exclusiveMinimum" in schema else 0)
    if high is not None and value > high:
        value = high - (1 if "exclusiveMaximum" in schema else 0)
    return int(value) if integer else float(value)


_MISSING = object()


def _given(schema: dict[str, Any]) -> Any:
    for key in ("default", "const"):
        if key in schema:
            return schema[key]
    for key in ("examples", "enum"):
        if schema.get(key):
            return schema[key][0]
    return _MISSING


def sample(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> Any:
    """A plausible value: the schema's default or first example or enum value, else a minimal
    one of the right type (required object properties only)."""
    defs = defs if defs is not None else schema.get("$defs", {})
    if "$ref" in schema:
        return sample(defs.get(schema["$ref"].rsplit("/", 1)[-1], {}), defs)
    given = _given(schema)
    if given is not _MISSING:
        return given
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return sample(options[0], defs)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties", {})
        return {
            name: sample(props[name], defs) for name in schema.get("required", []) if name in props
        }
    if kind == "array":
        count = schema.get("minItems", 0)
        return [sample(schema.get("items", {}), defs) for _ in range(count)]
    if kind in ("integer", "number"):
        return _number(schema, kind == "integer")
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return "x" * max(schema.get("minLength", 0), 7) if "minLength" in schema else "example"
