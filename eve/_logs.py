"""Repeated warnings said once, then counted: a fault that lasts a minute is a few lines.

Under a fault the same warning comes from every request, every poll of a queue and every
heartbeat, many a second and some with a traceback. ``RepeatSummary`` lets the first record
of a kind through and drops the next ones of that kind for ``window`` seconds; the first
one after that says how many were dropped (``… — 37 more like it in the last 30 s``), and
``flush()`` says it for every kind still counting (when the fault ends, and at shutdown).
A fault is summarised, never silenced.

A record's kind is its logger, level and first line (and its exception's class). A
``recognise`` function may know better: it names the fault a record is about (the database
refused a connection), so that every loop and request reporting that fault counts as one
kind, and shortens the record to one line without its traceback.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

#: seconds a kind of record stays quiet after it was shown
WINDOW_SECONDS = 30.0
#: kinds remembered before the quiet ones (nothing dropped, window over) are forgotten
_MAX_KINDS = 256
#: set on the records ``flush`` logs, which pass unchanged
_SUMMARY = "eve_repeat_summary"


@dataclass(frozen=True, kw_only=True)
class Recognised:
    """What ``recognise`` says of a record about a known fault."""

    #: the fault, the same whoever reports it ("connection refused")
    fault: str
    #: the record's text in one line, redacted, without a traceback
    line: str


Recognise = Callable[[logging.LogRecord], Recognised | None]


@dataclass(kw_only=True)
class _Kind:
    line: str
    #: where the first record came from: the summary is logged there too
    logger: str
    level: int
    pathname: str
    lineno: int
    #: when its record was last shown (the clock's time)
    shown_at: float
    #: records of this kind dropped since
    dropped: int = 0

    def summary(self, now: float) -> str:
        seconds = now - self.shown_at
        return f"{self.line} — {self.dropped} more like it in the last {seconds:.0f} s"


def _nothing(record: logging.LogRecord) -> Recognised | None:
    return None


def message_of(record: logging.LogRecord) -> str:
    """The record's message; its raw text when the arguments do not fit (a filter must
    not raise into the code that logged)."""
    try:
        return record.getMessage()
    except Exception:
        return str(record.msg)


def first_line_of(text: str) -> str:
    return (text.strip().splitlines() or [""])[0]


class RepeatSummary(logging.Filter):
    """A filter for loggers whose warnings repeat under a fault (see the module docstring).

    Records below WARNING pass untouched; so do the summaries ``flush`` logs. A paused
    summary lets every record pass, a recognised one still in one line.
    """

    def __init__(
        self,
        *,
        recognise: Recognise = _nothing,
        window: float = WINDOW_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.recognise = recognise
        self.window = window
        self.clock = clock
        #: whether repeats are dropped and counted (see ``pause``)
        self.counting = True
        self._kinds: dict[tuple[str, ...], _Kind] = {}
        # records come from any thread: DBOS logs from its own
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING or getattr(record, _SUMMARY, False):
            return True
        key = self._key(record)
        if not self.counting:
            return True
        now = self.clock()
        with self._lock:
            kind = self._kinds.get(key)
            if kind is None:
                self._remember(key, _first(record, now), now)
                return True
            if now - kind.shown_at < self.window:
                kind.dropped += 1
                return False
            summary = kind.summary(now) if kind.dropped else None
            kind.dropped, kind.shown_at = 0, now
        if summary is not None:
            # this record stands for the ones dropped before it (a traceback stays)
            text = message_of(record)
            record.msg, record.args = text.replace(first_line_of(text), summary, 1), None
        return True

    def _key(self, record: logging.LogRecord) -> tuple[str, ...]:
        recognised = self.recognise(record)
        if recognised is not None:
            record.msg, record.args = recognised.line, None
            record.exc_info = record.exc_text = record.stack_info = None
            return ("fault", recognised.fault)
        line = first_line_of(message_of(record))
        error = record.exc_info[1] if record.exc_info else None
        return (record.name, str(record.levelno), line, type(error).__name__ if error else "")

    def flush(self) -> None:
        """Log the count of every kind with records dropped, and start counting afresh."""
        now = self.clock()
        with self._lock:
            due = [kind for kind in self._kinds.values() if kind.dropped]
            self._kinds.clear()
        for kind in due:  # outside the lock: these records pass through ``filter`` too
            logger = logging.getLogger(kind.logger)
            summary = logger.makeRecord(
                kind.logger,
                kind.level,
                kind.pathname,
                kind.lineno,
                kind.summary(now),
                (),
                None,
                extra={_SUMMARY: True},
            )
            logger.handle(summary)

    def _remember(self, key: tuple[str, ...], kind: _Kind, now: float) -> None:
        if len(self._kinds) >= _MAX_KINDS:
            self._kinds = {
                k: v for k, v in self._kinds.items() if v.dropped or now - v.shown_at < self.window
            }
        self._kinds[key] = kind

    def install(self, loggers: Iterable[str]) -> None:
        """Filter the records of each named logger, before any filter already there (one
        that formats the traceback away, say), once."""
        for name in loggers:
            logger = logging.getLogger(name)
            if self not in logger.filters:
                logger.filters.insert(0, self)

    def pause(self) -> None:
        """Say what is still counted, then let every record pass (still shortened when
        recognised) until ``resume``."""
        self.flush()
        self.counting = False

    def resume(self) -> None:
        """Count repeats again, afresh."""
        self.flush()
        self.counting = True


def _first(record: logging.LogRecord, now: float) -> _Kind:
    return _Kind(
        line=first_line_of(message_of(record)),
        logger=record.name,
        level=record.levelno,
        pathname=record.pathname,
        lineno=record.lineno,
        shown_at=now,
    )
