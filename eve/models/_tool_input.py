"""Protocol checks both streaming adapters share: assembled tool input and protocol errors."""

from __future__ import annotations

import json
from typing import Any

from eve._redact import redact
from eve.errors import ModelProtocolError

# Enough of a broken argument string to see what went wrong without flooding a log line.
_SNIPPET = 200


def protocol_error(provider: str, problem: str) -> ModelProtocolError:
    """The error for a stream that broke the provider's protocol."""
    return ModelProtocolError(redact(f"{provider}: {problem}"), provider=provider)


def malformed_event(provider: str, error: json.JSONDecodeError) -> ModelProtocolError:
    """The error for a server-sent event whose data is not JSON (the SDKs raise a bare
    ``JSONDecodeError`` for it): the stream broke the protocol, whatever the cause."""
    return protocol_error(
        provider, f"the stream sent an event whose data is not JSON ({error.msg}, at {error.pos})"
    )


def parse_tool_input(provider: str, name: str, text: str) -> dict[str, Any]:
    """The tool call's input object from its streamed JSON; no JSON at all means ``{}``."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        snippet = text if len(text) <= _SNIPPET else text[:_SNIPPET] + "…"
        raise protocol_error(
            provider, f"tool call {name!r} has invalid input JSON ({error.msg}): {snippet!r}"
        ) from error
    if not isinstance(value, dict):
        raise protocol_error(
            provider, f"tool call {name!r} input is a JSON {type(value).__name__}, not an object"
        )
    return value
