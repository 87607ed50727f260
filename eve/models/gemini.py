"""Stream Gemini responses through the official ``google-genai`` SDK as eve model events.

``GeminiModel`` serves both ``google/<model>`` (the Gemini API, an API key) and
``vertex/<model>`` (Vertex AI: a project and location with Application Default Credentials,
or an express-mode API key). It builds each request (``gemini_request``), streams it, turns
each chunk into the API's JSON and translates it (``gemini_stream``), and maps the SDK's
exceptions to eve's. The SDK's own retries are off: eve retries (``_streaming``), waiting
what a 429's ``RetryInfo`` asks ("Rate limits", https://ai.google.dev/gemini-api/docs/rate-limits).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import httpx
import httpx2
import pydantic
from google import genai
from google.auth import exceptions as auth_errors
from google.genai import errors as genai_errors
from google.genai import types

from eve._redact import redact
from eve.errors import ModelCredentialsMissing
from eve.models._http_errors import connection_error, provider_error, status_error
from eve.models._streaming import SDKModel
from eve.models._tool_input import malformed_event, protocol_error
from eve.models.base import ModelRequest
from eve.models.gemini_models import gemini_traits
from eve.models.gemini_request import request_config, request_contents
from eve.models.gemini_stream import GeminiTranslator

__all__ = ["GeminiModel", "GeminiTranslator", "gemini_model", "retry_delay"]

#: where the Gemini API key may be, in the order the SDK reads them
API_KEY_ENVS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)s$")
_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"


def retry_delay(body: object) -> float | None:
    """The wait a ``google.rpc.RetryInfo`` detail of an error body asks for, in seconds
    (its ``retryDelay`` is a protobuf Duration in JSON: ``"37s"``, ``"0.5s"``)."""
    error = body.get("error", body) if isinstance(body, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    for detail in details if isinstance(details, list) else []:
        if isinstance(detail, dict) and detail.get("@type") == _RETRY_INFO:
            found = _DURATION.match(str(detail.get("retryDelay", "")))
            if found:
                return float(found.group(1))
    return None


def _standard_base64(text: str) -> str:
    padded = text.replace("-", "+").replace("_", "/") + "=" * (-len(text) % 4)
    return base64.b64encode(base64.b64decode(padded)).decode("ascii")


def _as_sent(chunk: types.GenerateContentResponse) -> dict[str, Any]:
    """The chunk in the API's JSON. The SDK renders bytes in URL-safe base64 where the API
    sends standard base64; signatures and inline data are put back as the API sent them
    (standard base64 also cannot hold ``sk-``, a key shape redaction removes from stored
    steps, so a recorded signature is never altered there)."""
    data = chunk.model_dump(
        mode="json", by_alias=True, exclude_none=True, exclude={"sdk_http_response"}
    )
    for candidate in data.get("candidates") or []:
        for part in (candidate.get("content") or {}).get("parts") or []:
            if isinstance(part.get("thoughtSignature"), str):
                part["thoughtSignature"] = _standard_base64(part["thoughtSignature"])
            inline = part.get("inlineData")
            if isinstance(inline, dict) and isinstance(inline.get("data"), str):
                inline["data"] = _standard_base64(inline["data"])
    return data


class _Chunks:
    """The SDK's chunk iterator as the API's JSON, closable as the pump needs."""

    def __init__(self, chunks: AsyncIterator[types.GenerateContentResponse]) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        async for chunk in self._chunks:
            yield _as_sent(chunk)

    async def close(self) -> None:
        close = getattr(self._chunks, "aclose", None)
        if close is not None:
            await close()


class GeminiModel(SDKModel[genai.Client]):
    """A ``ModelClient`` for ``google/<model>`` and ``vertex/<model>``."""

    def __init__(
        self,
        model: str,
        *,
        provider: str = "google",
        api_key: str | None = None,
        base_url: str | None = None,
        project: str | None = None,
        location: str | None = None,
    ) -> None:
        assert provider in ("google", "vertex")  # the registry passes one of the two
        self.provider = provider
        self._project = project
        self._location = location
        super().__init__(model, api_key=api_key or "", base_url=base_url, max_retries=0)
        #: the model constrains its answer to ``ModelRequest.output_schema`` natively
        self.structured_output = gemini_traits(model).structured_output

    def _new_client(self) -> genai.Client:
        # attempts=1: the SDK tries once and eve retries (``SDKModel.stream`` says why)
        options = types.HttpOptions(
            base_url=self._base_url, retry_options=types.HttpRetryOptions(attempts=1)
        )
        if self.provider == "vertex":
            return genai.Client(
                vertexai=True,
                api_key=self._api_key or None,
                project=self._project,
                location=self._location,
                http_options=options,
            )
        return genai.Client(api_key=self._api_key, http_options=options)

    def _translator(self) -> GeminiTranslator:
        return GeminiTranslator(self.provider)

    async def _start(self, request: ModelRequest) -> _Chunks:
        try:
            config = types.GenerateContentConfig.model_validate(
                request_config(self.provider, self._model, request)
            )
            contents = [
                types.Content.model_validate(c)
                for c in request_contents(self.provider, self._model, request)
            ]
        except pydantic.ValidationError as error:
            # a field the SDK does not know (in model_settings.extra, or a kept part from a
            # newer API): sending it again would fail the same way
            detail = f"the SDK cannot build the request: {error}"
            raise provider_error(self.provider, detail, secret=self._api_key or None) from error
        chunks = await self._sdk().aio.models.generate_content_stream(
            model=self._model,
            contents=contents,
            config=config,
        )
        return _Chunks(chunks)

    @contextmanager
    def _sdk_errors(self) -> Iterator[None]:
        key, name = self._api_key or None, self.provider
        try:
            yield
        except genai_errors.APIError as error:
            detail = _detail(error)
            headers = _wait_headers(error)
            status = error.code if error.code >= 400 else 500
            raise status_error(name, status, detail, secret=key, headers=headers) from error
        except auth_errors.GoogleAuthError as error:
            # Vertex AI without usable Application Default Credentials: not worth a retry
            raise ModelCredentialsMissing(
                redact(
                    f"{name}: Google Cloud credentials are missing or unusable ({error}): run "
                    "`gcloud auth application-default login`, set "
                    "GOOGLE_APPLICATION_CREDENTIALS, or use GOOGLE_API_KEY (express mode)",
                    secrets=(key,) if key else (),
                ),
                variable="GOOGLE_APPLICATION_CREDENTIALS",
            ) from error
        except (httpx.TransportError, httpx2.TransportError) as error:
            detail = str(error) or type(error).__name__
            raise connection_error(name, detail, secret=key) from error
        except json.JSONDecodeError as error:
            raise malformed_event(name, error) from error
        except (pydantic.ValidationError, genai_errors.UnknownApiResponseError) as error:
            detail = f"the API sent a response the SDK cannot read: {error}"
            raise protocol_error(name, detail) from error
        except ValueError as error:
            # the SDK refuses a request it cannot build (a part it has no field for)
            raise provider_error(name, str(error), secret=key) from error


def _detail(error: genai_errors.APIError) -> str:
    status = error.status or ""
    message = error.message or ""
    return f"{status}: {message}" if status and message else message or status or str(error)


def _wait_headers(error: genai_errors.APIError) -> dict[str, str] | None:
    """The response's ``retry-after`` if any, else the ``RetryInfo`` delay as one."""
    response = error.response
    headers = getattr(response, "headers", None)
    if headers is not None and headers.get("retry-after") is not None:
        return {"retry-after": str(headers["retry-after"])}
    delay = retry_delay(error.details)
    return {"retry-after": f"{delay:g}"} if delay is not None else None


def gemini_model(provider: str, name: str, env: Mapping[str, str]) -> GeminiModel:
    """The client for ``google/<name>`` or ``vertex/<name>`` from the environment.

    ``google``: ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``, base URL ``GOOGLE_GEMINI_BASE_URL``.
    ``vertex``: ``GOOGLE_CLOUD_PROJECT`` and ``GOOGLE_CLOUD_LOCATION`` (Application Default
    Credentials), or ``GOOGLE_API_KEY`` alone (express mode); base URL ``GOOGLE_VERTEX_BASE_URL``.
    """
    if provider == "vertex":
        project, key = env.get("GOOGLE_CLOUD_PROJECT"), env.get("GOOGLE_API_KEY")
        if not project and not key:
            raise ModelCredentialsMissing(
                f"GOOGLE_CLOUD_PROJECT is not set: export it (with GOOGLE_CLOUD_LOCATION, and "
                f"Application Default Credentials) or GOOGLE_API_KEY for express mode to use "
                f"vertex/{name}",
                variable="GOOGLE_CLOUD_PROJECT",
            )
        return GeminiModel(
            name,
            provider="vertex",
            api_key=None if project else key,
            base_url=env.get("GOOGLE_VERTEX_BASE_URL"),
            project=project,
            location=env.get("GOOGLE_CLOUD_LOCATION") or ("global" if project else None),
        )
    key = next((env[v] for v in API_KEY_ENVS if env.get(v)), None)
    if not key:
        raise ModelCredentialsMissing(
            f"GEMINI_API_KEY is not set: export it (or GOOGLE_API_KEY) to use google/{name}",
            variable="GEMINI_API_KEY",
        )
    return GeminiModel(name, api_key=key, base_url=env.get("GOOGLE_GEMINI_BASE_URL"))
