"""How the server answers: a body of ``eve.wire.answers`` with ``"ok"`` first, and a refusal
``{ok: false, code, error}`` with the error's status."""

from __future__ import annotations

import msgspec
from starlette.responses import Response

from eve._redact import redact
from eve.errors import EveError, QueueFull
from eve.wire.answers import Refusal, encode_answer

JSON = "application/json"


def answer(body: msgspec.Struct, *, status: int = 200, **headers: str) -> Response:
    """``body`` as a JSON answer, ``"ok": true`` first."""
    return Response(encode_answer(body), status_code=status, headers=headers, media_type=JSON)


def error_response(status: int, code: str, message: str, **headers: str) -> Response:
    body = encode_answer(Refusal(code=code, error=redact(message)), ok=False)
    return Response(body, status_code=status, headers=headers or None, media_type=JSON)


def refusal(error: EveError, **headers: str) -> Response:
    """``error`` as an answer: its status, its code and its (redacted) message."""
    if isinstance(error, QueueFull):
        headers = {"Retry-After": str(error.retry_after), **headers}
    return error_response(error.http_status, error.code, str(error), **headers)
