"""What eve hands DBOS to store: exceptions as redacted plain data, and DBOS's log redacted.

DBOS pickles what a workflow or step raised, attributes and all: a provider's exception
would land in the system database with the raw response it carries, and DBOS logs a value
it cannot pickle, secret included. ``EveSerializer`` stores an exception as JSON instead
(its class name, redacted message and plain fields) and rebuilds it on replay; other values
(eve's step records and messages, redacted before they get here) are pickled as DBOS does.
"""

from __future__ import annotations

import base64
import json
import logging
import pickle
from typing import Any

from dbos import Serializer

import eve.errors
from eve.errors import EveError
from eve.redact import redact

_EXCEPTION = "eve-exception:"
_PLAIN = (str, int, float, bool, type(None))


class EveSerializer(Serializer):
    def name(self) -> str:
        return "eve_plain_exceptions"

    def serialize(self, data: Any) -> str:
        if isinstance(data, BaseException) and not type(data).__module__.startswith("dbos"):
            return _EXCEPTION + json.dumps(_plain(data))
        try:
            return base64.b64encode(pickle.dumps(data)).decode()
        except Exception as error:
            # never the value itself: DBOS's default logs it, secrets and all
            raise TypeError(f"cannot store a {type(data).__name__} value") from error

    def deserialize(self, serialized_data: str) -> Any:
        if serialized_data.startswith(_EXCEPTION):
            return _rebuilt(json.loads(serialized_data[len(_EXCEPTION) :]))
        return pickle.loads(base64.b64decode(serialized_data))


def _plain(error: BaseException) -> dict[str, Any]:
    fields = {
        name: redact(value) if isinstance(value, str) else value
        for name, value in vars(error).items()
        if isinstance(value, _PLAIN) and not name.startswith("_")
    }
    return {"type": type(error).__name__, "message": redact(str(error)), "fields": fields}


def _rebuilt(record: dict[str, Any]) -> Exception:
    """The eve error it was, with its fields; any other exception as an ``EveError`` that
    names the original class (its object graph is exactly what is not kept)."""
    kind = getattr(eve.errors, str(record.get("type")), None)
    message = str(record.get("message", ""))
    if isinstance(kind, type) and issubclass(kind, EveError):
        error = kind.__new__(kind)
        Exception.__init__(error, message)
        error.__dict__.update(record.get("fields") or {})
        return error
    return EveError(f"{record.get('type')}: {message}")


class RedactingFilter(logging.Filter):
    """Rewrites a record's message with every known secret redacted (DBOS's own log)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact(record.getMessage())
        record.args = None
        if record.exc_info:
            # a traceback can quote the value too: keep its text, redacted, not the objects
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


def redact_dbos_log() -> None:
    """Route DBOS's logger, and the handlers DBOS gave it, through ``RedactingFilter``."""
    logger = logging.getLogger("dbos")
    for target in (logger, *logger.handlers):
        if not any(isinstance(f, RedactingFilter) for f in target.filters):
            target.addFilter(RedactingFilter())
