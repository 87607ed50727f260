"""Stream Claude responses through the official ``anthropic`` SDK as eve model events.

``AnthropicModel`` builds each request (``anthropic_request``), streams it through the SDK,
translates the raw events (``anthropic_stream``) and maps the SDK's exceptions to eve's.
A response the API pauses (``stop_reason: "pause_turn"``: a server tool's loop ran long) is
continued here, up to ``MAX_PAUSE_CONTINUATIONS`` times, by sending the paused content back as
the assistant turn so far (Anthropic, "Server tools", "The server-side loop and pause_turn",
https://platform.claude.com/docs/en/agents-and-tools/tool-use/server-tools); the loop sees
one response whose parts are every continuation's, in order, and whose usage is their sum.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import httpx2

from eve._tls import shared_tls_context
from eve.errors import ModelCredentialsMissing
from eve.messages import AssistantMessage, AssistantPart, ToolCallPart
from eve.models._guarded import GuardedTranslator
from eve.models._http_errors import connection_error, describe, provider_error, status_error
from eve.models._streaming import SDKModel
from eve.models._tool_input import malformed_event
from eve.models.anthropic_models import model_traits
from eve.models.anthropic_request import anthropic_messages, anthropic_tools, request_params
from eve.models.anthropic_stream import AnthropicTranslator, translate_anthropic_events
from eve.models.base import ModelRequest
from eve.models.events import Done, ModelEvent, PartCompleted, Retrying, TokenUsage, ToolCallEnd

if TYPE_CHECKING:
    # the SDK is imported where a client is made or its errors are read, not with this module:
    # its types cost 1.4 s of CPU to import, paid by every process that only names the class
    # (a worker of the test suite collecting the model tests, a turn that never calls Claude)
    import anthropic
    from anthropic import types as sdk

__all__ = [
    "AnthropicModel",
    "AnthropicTranslator",
    "anthropic_messages",
    "anthropic_tools",
    "translate_anthropic_events",
]

PROVIDER = "anthropic"
API_KEY_ENV = "ANTHROPIC_API_KEY"
#: how many times one response paused by the API is continued before it ends as ``other``
MAX_PAUSE_CONTINUATIONS = 5

# An error event inside a 200 stream names only its type; these are the statuses the same
# error has as a plain response, so callers can treat both alike.
_STREAM_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


def _replayed(part: AssistantPart) -> ModelEvent:
    if isinstance(part, ToolCallPart):
        return ToolCallEnd(id=part.id, name=part.name, input=part.input)
    return PartCompleted(part=part)


class AnthropicModel(SDKModel["anthropic.AsyncAnthropic"]):
    """A ``ModelClient`` for ``anthropic/<model>``."""

    provider = PROVIDER

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 0,
    ) -> None:
        key = api_key or os.environ.get(API_KEY_ENV)
        if not key:
            raise ModelCredentialsMissing(
                f"{API_KEY_ENV} is not set: export it (or pass api_key=) to use {PROVIDER}/{model}",
                variable=API_KEY_ENV,
            )
        super().__init__(model, api_key=key, base_url=base_url, max_retries=max_retries)
        #: the model constrains its answer to ``ModelRequest.output_schema`` natively
        self.structured_output = model_traits(model).structured_output

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        earlier: list[AssistantPart] = []
        usage = TokenUsage()
        current = request
        for _ in range(MAX_PAUSE_CONTINUATIONS + 1):
            segment: list[AssistantPart] = []
            done: Done | None = None
            async for event in super().stream(current):
                match event:
                    case Done():
                        done = event
                        continue
                    case PartCompleted():
                        segment.append(event.part)
                    case ToolCallEnd():
                        segment.append(
                            ToolCallPart(id=event.id, name=event.name, input=event.input)
                        )
                    case Retrying():
                        # the loop voids the whole response, earlier continuations too
                        segment.clear()
                        yield event
                        for kept in earlier:
                            yield _replayed(kept)
                        continue
                yield event
            if done is None:
                return  # cancelled
            usage += done.usage
            earlier.extend(segment)
            # pause_turn: a server tool is still running; the API takes the response so far
            # back and goes on with it
            if done.provider_stop_reason != "pause_turn":
                yield Done(stop_reason=done.stop_reason, usage=usage)
                return
            so_far = AssistantMessage(parts=list(earlier))
            current = replace(request, messages=[*request.messages, so_far])
        yield Done(stop_reason="other", usage=usage)

    def _new_client(self) -> anthropic.AsyncAnthropic:
        import anthropic

        return anthropic.AsyncAnthropic(
            api_key=self._api_key,
            base_url=self._base_url,
            max_retries=self._max_retries,
            # the SDK's own client, with the process's TLS context (eve/_tls.py)
            http_client=anthropic.DefaultAsyncHttpxClient(verify=shared_tls_context("httpx2")),
        )

    def _translator(self) -> GuardedTranslator:
        return GuardedTranslator(PROVIDER, AnthropicTranslator())

    async def _start(
        self, request: ModelRequest
    ) -> anthropic.AsyncStream[sdk.RawMessageStreamEvent]:
        params: dict[str, Any] = request_params(self._model, request)
        stream: anthropic.AsyncStream[sdk.RawMessageStreamEvent]
        stream = await self._sdk().messages.create(**params, stream=True)
        return stream

    @contextmanager
    def _sdk_errors(self) -> Iterator[None]:
        import anthropic

        key = self._api_key
        try:
            yield
        except anthropic.APIStatusError as error:
            status = error.status_code
            if status < 400:  # an error event inside a streamed 200 response
                status = _STREAM_ERROR_STATUS.get(str(error.type), 500)
            detail = describe(error.body, error.message)
            headers = error.response.headers if error.status_code >= 400 else None
            raise status_error(PROVIDER, status, detail, secret=key, headers=headers) from error
        except (anthropic.APIConnectionError, httpx2.TransportError) as error:
            detail = str(error.__cause__ or error) or type(error).__name__
            raise connection_error(PROVIDER, detail, secret=key) from error
        except anthropic.APIError as error:
            detail = describe(error.body, error.message)
            raise provider_error(PROVIDER, detail, secret=key) from error
        except json.JSONDecodeError as error:
            raise malformed_event(PROVIDER, error) from error
