"""One model call: the client's stream folded into a ``ModelResponse`` (what came before a
retry dropped), a step's text and reasoning published as they arrive, inside the call's
trace span."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import assert_never

from eve.errors import ModelProtocolError
from eve.events import (
    EventData,
    MessageAppendedData,
    ModelRetryingData,
    ReasoningAppendedData,
)
from eve.execution.response import ModelResponse, ResponseParts
from eve.models.base import ModelClient, ModelRequest
from eve.models.events import (
    Done,
    PartCompleted,
    ReasoningDelta,
    Retrying,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from eve.tracing import ModelCallSpan


async def _no_events(data: EventData) -> None:
    del data


def _no_check() -> None:
    pass


async def stream_response(
    client: ModelClient,
    request: ModelRequest,
    *,
    step: int | None,
    emit: Callable[[EventData], Awaitable[None]] = _no_events,
    check: Callable[[], None] = _no_check,
) -> ModelResponse:
    """Stream ``request``; ``check`` runs before each event and after the last (a
    cancellation raises there). ``step`` is None for a call outside the steps (a
    compaction's summary, an eval's judge), which publishes nothing."""
    built = ResponseParts()
    with ModelCallSpan(client.model_id, request, step=step) as call:
        async for event in client.stream(request):
            call.saw(event)
            check()
            match event:
                case TextDelta(text=delta):
                    built.add_text(delta)
                    await emit(MessageAppendedData(message_delta=delta))
                case ReasoningDelta(text=delta):
                    await emit(ReasoningAppendedData(reasoning_delta=delta))
                case ToolCallEnd():
                    built.add_call(event)
                case PartCompleted():
                    built.add_part(event)
                case Retrying(retry=retry, delay=delay, reason=reason):
                    # what came before the failure is dropped: the retry streams it anew
                    built.restart()
                    await emit(ModelRetryingData(retry=retry, delay=delay, reason=reason))
                case Done():
                    built.done = event
                case ToolCallStart() | ToolCallDelta():
                    pass
                case _:
                    assert_never(event)
    check()  # a cancellation that came with the stream's end wins over what it lacks
    if built.done is None:
        raise ModelProtocolError(f"{client.model_id}: the stream ended without a done event")
    return ModelResponse(
        parts=built.parts(),
        finish_reason=built.done.stop_reason,
        usage=built.done.usage,
        model=client.model_id,
    )
