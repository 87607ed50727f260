"""What eve hands DBOS to store: exceptions as redacted plain data; and DBOS's log, redacted
and (with eve's session and server logs) summarised under a fault.

DBOS pickles what a workflow or step raised, attributes and all: a provider's exception
would land in the system database with the raw response it carries, and DBOS logs a value
it cannot pickle, secret included. ``EveSerializer`` stores an exception as JSON instead
(its class name, redacted message and plain fields) and rebuilds it on replay; other values
(eve's step records and messages, redacted before they get here) are pickled as DBOS does.

While the database is out of reach or the disk is full, DBOS warns from every queue poll
and workflow, with tracebacks, and eve from every request and heartbeat: ``REPEATS``
shortens a record about such a failure to one line and says each kind once per
``eve._logs.WINDOW_SECONDS`` with a count.
"""

from __future__ import annotations

import base64
import json
import logging
import pickle
import re
from typing import Any

from dbos import Serializer

import eve.errors
from eve._logs import Recognised, RepeatSummary, first_line_of, message_of
from eve._redact import RedactingFilter, redact
from eve.errors import EveError
from eve.sessions.database_errors import failure_kind, first_line, scrub, unavailable

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


def redact_dbos_log() -> None:
    """Route DBOS's logger, and the handlers DBOS gave it, through ``RedactingFilter``."""
    logger = logging.getLogger("dbos")
    for target in (logger, *logger.handlers):
        if not any(isinstance(f, RedactingFilter) for f in target.filters):
            target.addFilter(RedactingFilter())


#: what a driver says when the database is out of reach or refuses writes, and what a
#: workflow still running says when DBOS's thread pool is shut down (lowercase): a warning
#: saying one of these is about that fault, whichever loop or request logged it
_FAULTS = (
    "connection refused",
    "the database system is shutting down",
    "the database system is starting up",
    "the database system is in recovery mode",
    "server closed the connection unexpectedly",
    "terminating connection due to administrator command",
    "consuming input failed",
    "connection failed",
    "database or disk is full",
    "no space left on device",
    "could not extend file",
    "disk i/o error",
    "attempt to write a readonly database",
    "database is locked",
    "cannot schedule new futures after shutdown",
)
_TRACEBACK = "Traceback (most recent call last):"
#: the last line of a traceback: the exception's class and message
_RAISED = re.compile(r"^(?:\w+\.)*\w+(?:Error|Exception): .*$", re.MULTILINE)
#: the loggers that repeat a database failure: DBOS's, and eve's around every request
REPEATING_LOGGERS = ("dbos", "eve.sessions", "eve.server")


def recognise_fault(record: logging.LogRecord) -> Recognised | None:
    """The fault a record reports (the session database out of reach or refusing writes, a
    workflow cut by shutdown), and the record in one redacted line: its first line and the
    exception's class and message, never the traceback (the fault is known, the traceback
    says nothing more). None for a record about anything else."""
    text = message_of(record)
    line = first_line_of(text).replace(_TRACEBACK, "").strip()
    error = record.exc_info[1] if record.exc_info else None
    if error is not None:
        raised = f"{failure_kind(error)}: {first_line(error)}"
        # what was raised decides, not the message: a bug's traceback is left whole
        fault = _fault_in(raised) or (failure_kind(error) if unavailable(error) else None)
    else:
        # DBOS logs some tracebacks as text: its last line says what was raised
        raised = (_RAISED.findall(text) or [""])[-1] if _TRACEBACK in text else ""
        fault = _fault_in(f"{line}\n{raised}")
    if fault is None:
        return None
    if raised and raised.split(": ", 1)[-1] not in line:
        line = f"{line} {raised}" if line.endswith(":") else f"{line} ({raised})"
    return Recognised(fault=fault, line=scrub(line))


def _fault_in(text: str) -> str | None:
    lowered = text.lower()
    return next((fault for fault in _FAULTS if fault in lowered), None)


#: this process's summary of repeated warnings: one per process, as logging is
REPEATS = RepeatSummary(recognise=recognise_fault)


def summarise_repeats() -> None:
    """Summarise the repeats of ``REPEATING_LOGGERS`` while the engine runs, counting
    afresh (a service started again owes nothing to the last)."""
    REPEATS.install(REPEATING_LOGGERS)
    REPEATS.resume()


def stop_summarising() -> None:
    """Say what is still counted. Outside a running engine every record passes (a process
    that embeds eve logs what it likes between two runs), a database fault or a workflow
    the shutdown cut still in one line."""
    REPEATS.pause()
