"""Turn a provider SDK's failure into one of eve's model errors, with every secret redacted.

Both official SDKs raise the same shapes (a status error carrying the decoded body, a
connection error, a bare API error), so the adapters pick the SDK classes and these
functions build the eve error: one wording and one status mapping for every provider.
"""

from __future__ import annotations

from eve.errors import (
    ModelAuthError,
    ModelConnectionError,
    ModelError,
    ModelHTTPError,
    ModelRateLimited,
)
from eve.redact import redact

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


def status_error(provider: str, status: int, detail: str, *, secret: str | None) -> ModelHTTPError:
    """The error for an HTTP error status: auth, rate limit, or any other."""
    message = _clean(f"{provider}: HTTP {status}: {detail}", secret)
    if status in (401, 403):
        return ModelAuthError(f"{message} (check the API key)", status=status, provider=provider)
    if status == 429:
        return ModelRateLimited(message, status=status, provider=provider)
    return ModelHTTPError(message, status=status, provider=provider)


def connection_error(provider: str, detail: str, *, secret: str | None) -> ModelConnectionError:
    """The error for a provider that could not be reached or whose stream was cut off."""
    return ModelConnectionError(
        _clean(f"{provider}: connection failed: {detail}", secret), provider=provider
    )


def provider_error(provider: str, detail: str, *, secret: str | None) -> ModelError:
    """The error for a failure the provider reported without an HTTP status."""
    return ModelError(_clean(f"{provider}: {detail}", secret), provider=provider)
