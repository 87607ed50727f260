"""What OpenAI's two APIs share: the provider's names, which API a base URL gets, media as
URLs, the strict-schema rule and the reasoning effort map.

eve speaks two OpenAI APIs (see docs/models.md, "OpenAI: Responses or Chat Completions"):
the Responses API on OpenAI's own endpoint, Chat Completions on any other server that is
OpenAI-compatible. Both adapters build their requests from the helpers here, so a rule
(which documents become text, when a schema is strict) is the same on both.
"""

from __future__ import annotations

import base64
from typing import Any, Literal
from urllib.parse import urlsplit

from eve.errors import ModelConnectionError, ModelHTTPError
from eve.manifest import OpenAIApi
from eve.messages import DocumentPart, ImagePart, ToolResultMessage
from eve.models._http_errors import status_error

PROVIDER = "openai"
API_KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"
OFFICIAL_HOST = "api.openai.com"
#: sent to OpenAI-compatible servers that take no key, since the SDK refuses an empty one
PLACEHOLDER_KEY = "not-needed"
#: the name the final answer's JSON Schema is given (``text.format`` / ``response_format``)
OUTPUT_SCHEMA_NAME = "final_answer"

#: an API eve speaks, once ``auto`` is decided
OpenAIApiChoice = Literal["responses", "chat-completions"]


def is_official(base_url: str | None) -> bool:
    """Whether ``base_url`` is OpenAI's own endpoint (no base URL means the SDK's default)."""
    return base_url is None or urlsplit(base_url).hostname == OFFICIAL_HOST


def choose_api(setting: OpenAIApi, base_url: str | None) -> OpenAIApiChoice:
    """The API a client speaks: ``auto`` is the Responses API on OpenAI's own endpoint and
    Chat Completions on any other base URL (vLLM, llama.cpp, Ollama serve only that one)."""
    if setting == "auto":
        return "responses" if is_official(base_url) else "chat-completions"
    return setting


def media_url(part: ImagePart | DocumentPart) -> str:
    """The part's URL, or its bytes as a ``data:`` URL (how both APIs take inline media)."""
    if part.url is not None:
        return part.url
    assert part.data is not None  # _Media.__post_init__ guarantees one of the two
    return f"data:{part.media_type};base64,{base64.b64encode(part.data).decode('ascii')}"


def document_as_text(part: DocumentPart) -> str | None:
    """A ``text/*`` document held as bytes, as the text the model reads; None for others.

    OpenAI's file inputs are meant for PDFs and compatible servers rarely take files at
    all, while every model reads text: so a text document is sent as text on both APIs.
    """
    if part.data is None or not part.media_type.startswith("text/"):
        return None
    label = part.name or "document"
    return f"{label}:\n{part.data.decode('utf-8', errors='replace')}"


def file_name(part: DocumentPart) -> str:
    """The name a document is sent under: its own, else one its media type suggests (OpenAI
    asks for a file name beside inline file data)."""
    if part.name:
        return part.name
    subtype = part.media_type.partition("/")[2].partition(";")[0] or "bin"
    return f"document.{subtype}"


def result_text(message: ToolResultMessage) -> str:
    """A tool result's text as the model reads it; errors say so."""
    return f"Error: {message.content}" if message.is_error else message.content


# Keywords whose values are data, not schemas: never walked for objects.
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples", "required"})


def strict_compatible(schema: object) -> bool:
    """Whether OpenAI's strict mode takes ``schema`` as it is: every object schema lists all
    its properties as required and sets ``additionalProperties`` to false.

    https://platform.openai.com/docs/guides/structured-outputs#supported-schemas ("All fields
    must be required", "additionalProperties: false must always be set in objects"). A schema
    that is not (a pydantic model with a defaulted field) is sent with ``strict`` false: the
    provider then guides the output without guaranteeing it, and eve validates it anyway.
    """
    if isinstance(schema, list):
        return all(strict_compatible(item) for item in schema)
    if not isinstance(schema, dict):
        return True
    if schema.get("type") == "object" or isinstance(schema.get("properties"), dict):
        properties = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False:
            return False
        if set(schema.get("required") or ()) != set(properties):
            return False
    return all(strict_compatible(v) for k, v in schema.items() if k not in _DATA_KEYWORDS)


def json_schema_format(schema: dict[str, Any]) -> dict[str, Any]:
    """The final answer's schema as OpenAI's ``json_schema`` format (name, schema, strict)."""
    return {"name": OUTPUT_SCHEMA_NAME, "schema": schema, "strict": strict_compatible(schema)}


# An error inside a 200 stream carries only a code; these are the statuses the same failure
# has as a plain response (https://platform.openai.com/docs/guides/error-codes), so a rate
# limit or an outage mid-stream is treated as it would be before the stream started.
_STREAM_ERROR_STATUS = {
    "rate_limit_exceeded": 429,
    "insufficient_quota": 429,
    "server_error": 500,
    "server_is_overloaded": 503,
    "slow_down": 503,
}


def stream_error(code: str | None, message: str) -> ModelHTTPError:
    """The error for an ``error`` event or a failed response inside a streamed answer."""
    kind = code or "error"
    status = _STREAM_ERROR_STATUS.get(kind, 400 if kind.startswith("invalid") else 500)
    return status_error(PROVIDER, status, f"{kind}: {message}", secret=None)


def ended_early(missing: str) -> ModelConnectionError:
    """The error for a stream that ended without ``missing``, the event that ends a response."""
    return ModelConnectionError(
        f"{PROVIDER}: the stream ended before the response was complete "
        f"(no {missing}); the connection was probably cut off",
        provider=PROVIDER,
    )
