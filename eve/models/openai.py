"""OpenAI models through the official ``openai`` SDK: the Responses API on OpenAI's own
endpoint, Chat Completions on any OpenAI-compatible server.

Which API a client speaks is :func:`~eve.models.openai_parts.choose_api`: a node's
``openai_api`` (``define_agent(openai_api=…)``), where ``auto`` means the Responses API when
the base URL is OpenAI's (``OPENAI_BASE_URL`` unset, or host ``api.openai.com``) and Chat
Completions otherwise (llama.cpp, vLLM, Ollama serve only that one). Such a server may need
no key, so a placeholder is sent when none is set. Each API has its own module
(``openai_responses``, ``openai_chat``); this one holds the client and the error mapping.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import openai

from eve._tls import shared_tls_context
from eve.errors import ModelCredentialsMissing
from eve.manifest import OpenAIApi
from eve.models._guarded import GuardedTranslator
from eve.models._http_errors import connection_error, describe, provider_error, status_error
from eve.models._streaming import ClosableStream, SDKModel, Translator
from eve.models._tool_input import malformed_event
from eve.models.base import ModelRequest
from eve.models.openai_chat import start_chat, translate_openai_chunks
from eve.models.openai_chat_reader import ChatClient, OpenAITranslator
from eve.models.openai_parts import (
    API_KEY_ENV,
    BASE_URL_ENV,
    PLACEHOLDER_KEY,
    PROVIDER,
    OpenAIApiChoice,
    choose_api,
    is_official,
)
from eve.models.openai_responses import ResponsesTranslator, start_response

__all__ = ["OpenAIModel", "choose_api", "is_official", "translate_openai_chunks"]


class OpenAIModel(SDKModel[openai.AsyncOpenAI]):
    """A ``ModelClient`` for ``openai/<model>`` or any OpenAI-compatible server."""

    provider = PROVIDER
    #: both APIs constrain the answer to a JSON Schema (``text.format`` / ``response_format``)
    structured_output = True

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 0,
        api: OpenAIApi = "auto",
    ) -> None:
        base_url = base_url or os.environ.get(BASE_URL_ENV) or None
        key = api_key or os.environ.get(API_KEY_ENV)
        self._official = is_official(base_url)
        if not key and self._official:
            raise ModelCredentialsMissing(
                f"{API_KEY_ENV} is not set: export it (or pass api_key=) to use "
                f"{PROVIDER}/{model}, or set {BASE_URL_ENV} for a server that needs no key",
                variable=API_KEY_ENV,
            )
        #: the API this client speaks
        self.api: OpenAIApiChoice = choose_api(api, base_url)
        super().__init__(
            model, api_key=key or PLACEHOLDER_KEY, base_url=base_url, max_retries=max_retries
        )

    def __repr__(self) -> str:
        return f"OpenAIModel({self._model!r}, base_url={self._base_url!r}, api={self.api!r})"

    def _new_client(self) -> openai.AsyncOpenAI:
        return ChatClient(
            api_key=self._api_key,
            base_url=self._base_url,
            max_retries=self._max_retries,
            # the SDK's own client, with the process's TLS context (eve/_tls.py)
            http_client=openai.DefaultAsyncHttpxClient(verify=shared_tls_context("httpx2")),
        )

    def _translator(self) -> Translator[Any]:
        inner: Translator[Any] = (
            ResponsesTranslator() if self.api == "responses" else OpenAITranslator()
        )
        return GuardedTranslator(PROVIDER, inner)

    async def _start(self, request: ModelRequest) -> ClosableStream:
        if self.api == "responses":
            return await start_response(self._sdk(), self._model, request)
        return await start_chat(self._sdk(), self._model, request, official=self._official)

    @contextmanager
    def _sdk_errors(self) -> Iterator[None]:
        key = None if self._api_key == PLACEHOLDER_KEY else self._api_key
        try:
            yield
        except openai.APIStatusError as error:
            detail = self._hint(error.status_code, describe(error.body, error.message))
            raise status_error(
                PROVIDER, error.status_code, detail, secret=key, headers=error.response.headers
            ) from error
        except openai.APIConnectionError as error:
            detail = str(error.__cause__ or error) or type(error).__name__
            raise connection_error(PROVIDER, detail, secret=key) from error
        except openai.APIError as error:
            detail = describe(error.body, error.message)
            raise provider_error(PROVIDER, detail, secret=key) from error
        except json.JSONDecodeError as error:
            raise malformed_event(PROVIDER, error) from error

    def _hint(self, status: int, detail: str) -> str:
        # OpenAI's newer reasoning models refuse function tools with reasoning_effort on Chat
        # Completions and name /v1/responses: say how an agent gets there.
        if self.api == "chat-completions" and status == 400 and "/v1/responses" in detail:
            return f'{detail} (eve: define_agent(openai_api="responses") uses the Responses API)'
        return detail
