"""The ``chat {model}`` span of one model call: the loop's model seam.

The loop opens one around each model request it really makes and hands it every event the
stream yields. A step a recovered turn replays from its durable record makes no request, so
it opens no span: a completed step is traced once, by the process that ran it.
"""

from __future__ import annotations

import json

from opentelemetry.trace import INVALID_SPAN, Span, SpanKind

from eve._redact import redact
from eve.models.base import ModelRequest
from eve.models.events import Done, ModelEvent, Retrying, TextDelta, ToolCallEnd
from eve.tracing._otel import SpanBlock, fail, tracer
from eve.tracing.conventions import (
    CACHE_READ_TOKENS,
    CACHE_WRITE_TOKENS,
    FINISH_REASONS,
    INPUT_TOKENS,
    OPERATION,
    OUTPUT_MESSAGES,
    OUTPUT_TOKENS,
    PROVIDER,
    REQUEST_MAX_TOKENS,
    REQUEST_MODEL,
    REQUEST_PURPOSE,
    STEP_INDEX,
    capture_content,
    provider_and_model,
)
from eve.tracing.turn_spans import traced_turns


class ModelCallSpan(SpanBlock):
    """``with ModelCallSpan(model_id, request, step=i) as call:`` … ``call.saw(event)`` per
    event (``step``: which model call of the turn; None for a compaction's summary).

    A span of the current context (the turn's ``invoke_agent``). It ends with the block: an
    exception leaving the block is recorded on it, unless the request's signal says the turn
    was cancelled (a cancelled call did not fail)."""

    def __init__(self, model_id: str, request: ModelRequest, *, step: int | None) -> None:
        self.request = request
        self.recording = self.content = False
        self.text: list[str] = []
        self.calls: list[ToolCallEnd] = []
        if not traced_turns():
            self.span: Span = INVALID_SPAN
            return
        provider, model = provider_and_model(model_id)
        attributes: dict[str, str | int] = {
            OPERATION: "chat",
            PROVIDER: provider,
            REQUEST_MODEL: model,
            REQUEST_MAX_TOKENS: request.max_output_tokens,
            REQUEST_PURPOSE: request.purpose,
        }
        if step is not None:  # a compaction's summary is asked between steps, of none
            attributes[STEP_INDEX] = step
        self.span = tracer().start_span(
            f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes
        )
        #: building attributes only pays when something records them
        self.recording = self.span.is_recording()
        self.content = self.recording and capture_content()

    def saw(self, event: ModelEvent) -> None:
        if not self.recording:
            return
        match event:
            case Done(stop_reason=stop, usage=usage):
                self.span.set_attributes(
                    {
                        FINISH_REASONS: [stop],
                        INPUT_TOKENS: usage.total_input_tokens,
                        OUTPUT_TOKENS: usage.output_tokens,
                        CACHE_READ_TOKENS: usage.cache_read_tokens,
                        CACHE_WRITE_TOKENS: usage.cache_write_tokens,
                    }
                )
            case Retrying(retry=retry, delay=delay, reason=reason):
                # text streamed before a retry is void, as the loop treats it
                self.text.clear()
                self.calls.clear()
                self.span.add_event(
                    "eve.model.retrying",
                    {"eve.retry": retry, "eve.delay_seconds": delay, "eve.reason": reason},
                )
            case TextDelta(text=text) if self.content:
                self.text.append(text)
            case ToolCallEnd() if self.content:
                self.calls.append(event)
            case _:
                pass

    def close(self, error: BaseException | None) -> None:
        if self.recording:
            if error is not None and not self.request.signal.cancelled:
                fail(self.span, type(error).__name__, str(error))
            if self.content:
                self.span.set_attribute(OUTPUT_MESSAGES, self._output())
        self.span.end()

    def _output(self) -> str:
        parts: list[dict[str, object]] = []
        if self.text:
            parts.append({"type": "text", "content": "".join(self.text)})
        parts += [
            {"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.input}
            for c in self.calls
        ]
        return redact(json.dumps([{"role": "assistant", "parts": parts}], ensure_ascii=False))
