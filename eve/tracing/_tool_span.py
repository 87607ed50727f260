"""The ``execute_tool`` span and its attributes, for a function tool's run and a task call."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind

from eve._redact import redact
from eve.events import ResultStatus
from eve.tracing._otel import tracer
from eve.tracing.conventions import (
    CONVERSATION,
    OPERATION,
    STEP_INDEX,
    TOOL_ARGUMENTS,
    TOOL_CALL_ID,
    TOOL_NAME,
    TOOL_RESULT,
    TOOL_STATUS,
)


def tool_span(
    name: str,
    call_id: str,
    *,
    session_id: str,
    step: int | None,
    parent: Span | None = None,
    start_time: int | None = None,
) -> Span:
    """An ``execute_tool`` span, child of ``parent`` or else of the current span (the
    turn's); not made current."""
    attributes: dict[str, str | int] = {
        OPERATION: "execute_tool",
        TOOL_NAME: name,
        TOOL_CALL_ID: call_id,
        CONVERSATION: session_id,
    }
    if step is not None:
        attributes[STEP_INDEX] = step
    return tracer().start_span(
        f"execute_tool {name}",
        context=trace.set_span_in_context(parent) if parent is not None else None,
        kind=SpanKind.INTERNAL,
        attributes=attributes,
        start_time=start_time,
    )


def record_arguments(span: Span, arguments: dict[str, Any]) -> None:
    span.set_attribute(
        TOOL_ARGUMENTS, redact(json.dumps(arguments, ensure_ascii=False, default=str))
    )


def record_result(span: Span, status: ResultStatus, output: str, *, content: bool) -> None:
    span.set_attribute(TOOL_STATUS, status)
    if content:
        span.set_attribute(TOOL_RESULT, redact(output))
