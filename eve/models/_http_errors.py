"""Turn a provider SDK's failure into one of eve's model errors, with every secret redacted.

Both official SDKs raise the same shapes (a status error carrying the decoded body, a
connection error, a bare API error), so the adapters pick the SDK classes and these
functions build the eve error: one wording and one status mapping for every provider.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime

from eve._redact import redact
from eve.errors import (
    ModelAuthError,
    ModelConnectionError,
    ModelContextWindowExceeded,
    ModelError,
    ModelHTTPError,
    ModelRateLimited,
)

# An error page from a proxy can be a whole HTML document; a line is enough to act on.
_DETAIL_LIMIT = 500


def describe(body: object, fallback: str) -> str:
    """The provider's own explanation from an error body, else ``fallback``."""
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict):
        message, kind = error.get("message"), error.get("type")
        if isinstance(message, str) and message:
            return f"{kind}: {message}" if isinstance(kind, str) and kind else message
    if isinstance(error, str) and error.strip():
        return error.strip()
    return fallback


def _clean(text: str, secret: str | None) -> str:
    # Redact first, then cut: a cut through a key would leave a prefix the patterns miss.
    text = redact(text, secrets=(secret,) if secret else ())
    return text if len(text) <= _DETAIL_LIMIT else text[:_DETAIL_LIMIT] + "…"


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """How long the provider asks to wait before trying again: ``retry-after-ms`` (Anthropic
    and OpenAI send it), else ``retry-after`` in seconds or as an HTTP date (RFC 9110
    section 10.2.3). None when it says nothing usable."""
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            seconds = float(raw) / scale
        except ValueError:
            if scale != 1.0:
                continue
            try:
                seconds = parsedate_to_datetime(raw).timestamp() - time.time()
            except (TypeError, ValueError):
                continue
        if seconds >= 0:
            return seconds
    return None


#: how providers word a request over the window: OpenAI's code and message, Anthropic's,
#: llama.cpp's server (``exceed_context_size_error``), vLLM's and Ollama's
_WINDOW_WORDS = (
    "context_length_exceeded",
    "maximum context length",
    "prompt is too long",
    "exceed_context_size",
    "exceeds the available context size",
    "context window",
)
#: what a window error adds: the fix, which the provider cannot know
WINDOW_HINT = (
    " (the request does not fit the model's context window: set "
    "define_agent(model_context_window_tokens=...) to the window the model really has, so "
    "eve compacts or trims the history and bounds the output before it is reached)"
)


def _window_error(status: int, detail: str) -> bool:
    lowered = detail.lower()
    return status in (400, 413) and any(words in lowered for words in _WINDOW_WORDS)


def status_error(
    provider: str,
    status: int,
    detail: str,
    *,
    secret: str | None,
    headers: Mapping[str, str] | None = None,
) -> ModelHTTPError:
    """The error for an HTTP error status: auth, rate limit, or any other; ``headers`` are the
    response's, for the wait the provider asks for."""
    message = _clean(f"{provider}: HTTP {status}: {detail}", secret)
    wait = retry_after_seconds(headers)
    if status in (401, 403):
        return ModelAuthError(
            f"{message} (check the API key)", status=status, provider=provider, retry_after=wait
        )
    if status == 429:
        return ModelRateLimited(message, status=status, provider=provider, retry_after=wait)
    if _window_error(status, detail):
        return ModelContextWindowExceeded(
            message + WINDOW_HINT, status=status, provider=provider, retry_after=wait
        )
    return ModelHTTPError(message, status=status, provider=provider, retry_after=wait)


def connection_error(provider: str, detail: str, *, secret: str | None) -> ModelConnectionError:
    """The error for a provider that could not be reached or whose stream was cut off."""
    return ModelConnectionError(
        _clean(f"{provider}: connection failed: {detail}", secret), provider=provider
    )


def provider_error(provider: str, detail: str, *, secret: str | None) -> ModelError:
    """The error for a failure the provider reported without an HTTP status."""
    return ModelError(_clean(f"{provider}: {detail}", secret), provider=provider)
