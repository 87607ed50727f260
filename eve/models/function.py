"""``FunctionModel``: a model whose responses a Python function decides — the test double.

The function receives each ``ModelRequest`` and returns the events to stream (a list, or an
async iterator for control over timing). It is a real ``ModelClient``, so tests drive the
same loop users run. ``structured_output=True`` makes it a client with native structured
output: the loop sends it ``request.output_schema`` and parses its text as the answer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable

from eve.models.base import ModelRequest
from eve.models.events import ModelEvent

Responder = Callable[[ModelRequest], Iterable[ModelEvent] | AsyncIterator[ModelEvent]]


class FunctionModel:
    def __init__(
        self, fn: Responder, *, model_id: str = "function", structured_output: bool = False
    ) -> None:
        self.fn = fn
        self.model_id = model_id
        self.structured_output = structured_output
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        produced = self.fn(request)
        if isinstance(produced, AsyncIterator):
            async for event in produced:
                yield event
        else:
            for item in produced:
                yield item
