"""A step's model call down the node's fallback chain (``define_agent(model=[...])``).

The first model is asked; when it fails past its retries (``ModelRetriesExhausted``) or
with an outage it does not retry (a 5xx or a lost connection with retries turned off), the
next one is asked the same request, after a ``model.fallback`` event. Any other failure (a
refused request, a bad key, a window error) is the request's, not the model's, and fails
the step as it came: another model would be asked a request that is wrong.

The response records which model answered (``ModelResponse.model``), so a replayed step
prices and reports that model without asking any again. Reasoning and provider blocks of
one provider never reach another: each adapter sends ``messages.parts_for`` its own.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from eve._redact import redact
from eve.errors import ModelError, ModelRetriesExhausted
from eve.events import EventData, ModelFallbackData
from eve.execution.model_stream import stream_response
from eve.execution.response import ModelResponse
from eve.models._retry import is_transient
from eve.models.base import ModelClient, ModelRequest

log = logging.getLogger("eve.models")


def moves_on(error: ModelError) -> bool:
    """Whether the next model of the chain is asked after ``error``."""
    return isinstance(error, ModelRetriesExhausted) or is_transient(error)


async def stream_chain(
    models: Sequence[ModelClient],
    request_for: Callable[[ModelClient], ModelRequest],
    *,
    step: int,
    emit: Callable[[EventData], Awaitable[None]],
    check: Callable[[], None],
) -> ModelResponse:
    """Stream the request to the first of ``models`` that answers (``request_for`` builds
    each one's: their output limits differ); ``check`` raises when the turn is cancelled,
    and a cancelled turn never moves on."""
    *before, last = models
    for position, client in enumerate(before):
        try:
            return await stream_response(
                client, request_for(client), step=step, emit=emit, check=check
            )
        except ModelError as error:
            check()
            if not moves_on(error):
                raise
            following = models[position + 1].model_id
            reason = redact(f"{type(error).__name__}: {error}")
            log.warning("%s failed (%s); asking %s", client.model_id, reason, following)
            await emit(
                ModelFallbackData(from_model=client.model_id, to_model=following, reason=reason)
            )
    return await stream_response(last, request_for(last), step=step, emit=emit, check=check)
