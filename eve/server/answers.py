"""How the server answers a refusal: ``{ok: false, code, error}`` with the error's status."""

from __future__ import annotations

from starlette.responses import JSONResponse

from eve.errors import EveError, QueueFull
from eve.redact import redact


def error_response(status: int, code: str, message: str, **headers: str) -> JSONResponse:
    body = {"ok": False, "code": code, "error": redact(message)}
    return JSONResponse(body, status_code=status, headers=headers or None)


def refusal(error: EveError, **headers: str) -> JSONResponse:
    """``error`` as an answer: its status, its code and its (redacted) message."""
    if isinstance(error, QueueFull):
        headers = {"Retry-After": str(error.retry_after), **headers}
    return error_response(error.http_status, error.code, str(error), **headers)
