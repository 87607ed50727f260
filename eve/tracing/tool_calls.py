"""The ``execute_tool {tool}`` span of a function tool's run: the loop's tool seam.

The span is current while the tool runs, so spans the tool starts itself (an HTTP client's,
a database driver's) are its children; a sync tool's thread gets the context with it. A call
that a recovered turn replays from its durable record does not run, so it opens no span.
Calls that run as tasks (subagents, workflow tools) are traced from their events instead
(``eve.tracing.turn_spans``): their work happens in a session of their own.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Self

from opentelemetry import trace
from opentelemetry.trace import INVALID_SPAN, Span

from eve.tracing._otel import SpanBlock, fail
from eve.tracing._tool_span import record_arguments, record_result, tool_span
from eve.tracing.conventions import capture_content
from eve.tracing.turn_spans import traced_turns


class ToolCallSpan(SpanBlock):
    """``with ToolCallSpan(name, call_id, …) as traced:`` around the run; then
    ``traced.failed(error)`` or ``traced.completed(output)``."""

    def __init__(
        self, name: str, call_id: str, arguments: dict[str, Any], *, session_id: str, step: int
    ) -> None:
        self.span = (
            tool_span(name, call_id, session_id=session_id, step=step)
            if traced_turns()
            else INVALID_SPAN
        )
        self.content = self.span.is_recording() and capture_content()
        if self.content:
            record_arguments(self.span, arguments)
        # the API's no-op span (no provider) is not worth making current
        self._current: AbstractContextManager[Span] | None = (
            trace.use_span(
                self.span, end_on_exit=True, record_exception=False, set_status_on_exception=False
            )
            if self.span.get_span_context().is_valid
            else None
        )

    def __enter__(self) -> Self:
        if self._current is not None:
            self._current.__enter__()
        return self

    def failed(self, error: BaseException, traceback: str | None = None) -> None:
        """The tool raised ``error``; ``traceback`` is its bounded, redacted traceback."""
        if self.span.is_recording():
            fail(self.span, type(error).__name__, str(error), stacktrace=traceback)
            record_result(
                self.span, "failed", f"{type(error).__name__}: {error}", content=self.content
            )

    def completed(self, output: str) -> None:
        if self.span.is_recording():
            record_result(self.span, "completed", output, content=self.content)

    def close(self, error: BaseException | None) -> None:
        if self._current is None:
            self.span.end()
        elif error is None:
            self._current.__exit__(None, None, None)  # which ends the span
        else:
            self._current.__exit__(type(error), error, error.__traceback__)
