"""RepeatSummary: a kind of warning once per window, then with a count; a known fault is one
kind whoever reports it, in one line; nothing below WARNING is touched. A fake clock stands
in for time, so no test waits or depends on how fast it runs."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from eve._logs import Recognised, RepeatSummary


@dataclass
class Clock:
    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Logs:
    clock: Clock
    summary: RepeatSummary
    out: io.StringIO

    def lines(self) -> list[str]:
        return self.out.getvalue().splitlines()


def _disk_full(record: logging.LogRecord) -> Recognised | None:
    if "disk is full" in record.getMessage():
        return Recognised(fault="disk full", line=record.getMessage().splitlines()[0])
    return None


@pytest.fixture
def logs() -> Iterator[Logs]:
    clock = Clock()
    summary = RepeatSummary(recognise=_disk_full, window=30, clock=clock)
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    names = ("test.quiet.a", "test.quiet.b")
    for name in names:
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.propagate = False
        logger.setLevel(logging.DEBUG)
        summary.install([name])
        summary.install([name])  # once is enough
    yield Logs(clock=clock, summary=summary, out=out)
    for name in names:
        logger = logging.getLogger(name)
        logger.removeHandler(handler)
        logger.removeFilter(summary)
        logger.propagate = True


def test_a_repeated_warning_is_shown_once_per_window_with_a_count(logs: Logs) -> None:
    log = logging.getLogger("test.quiet.a")
    assert log.filters.count(logs.summary) == 1
    for _ in range(5):
        log.warning("heartbeat failed: %s", "OperationalError")
        logs.clock.now += 1
    log.warning("something else")
    logs.clock.now += 30
    log.warning("heartbeat failed: %s", "OperationalError")
    log.warning("heartbeat failed: %s", "OperationalError")
    assert logs.lines() == [
        "test.quiet.a WARNING heartbeat failed: OperationalError",
        "test.quiet.a WARNING something else",
        "test.quiet.a WARNING heartbeat failed: OperationalError — 4 more like it in the last 35 s",
    ]
    logs.summary.flush()  # the last one, dropped, is counted at the flush
    assert logs.lines()[-1] == (
        "test.quiet.a WARNING heartbeat failed: OperationalError — 1 more like it in the last 0 s"
    )


def test_a_kind_quiet_for_a_window_is_shown_again_without_a_count(logs: Logs) -> None:
    log = logging.getLogger("test.quiet.a")
    log.warning("the queue is stuck")
    logs.clock.now += 31
    log.warning("the queue is stuck")
    assert logs.lines() == ["test.quiet.a WARNING the queue is stuck"] * 2


def test_flush_reports_what_is_pending_and_starts_afresh(logs: Logs) -> None:
    log = logging.getLogger("test.quiet.b")
    for _ in range(3):
        log.error("POST create: unavailable")
    log.warning("once only")
    logs.clock.now += 12
    logs.summary.flush()
    logs.summary.flush()  # nothing more to say
    log.error("POST create: unavailable")  # a new fault after the flush is news
    assert logs.lines() == [
        "test.quiet.b ERROR POST create: unavailable",
        "test.quiet.b WARNING once only",
        "test.quiet.b ERROR POST create: unavailable — 2 more like it in the last 12 s",
        "test.quiet.b ERROR POST create: unavailable",
    ]


def test_a_recognised_fault_is_one_kind_in_one_line_whoever_reports_it(logs: Logs) -> None:
    try:
        raise OSError("the disk is full")
    except OSError:
        logging.getLogger("test.quiet.a").warning("queue thread: the disk is full", exc_info=True)
    logging.getLogger("test.quiet.b").error("POST create: the disk is full\n  details")
    logging.getLogger("test.quiet.a").warning("queue thread: the disk is full")
    logs.summary.flush()
    assert logs.lines() == [
        "test.quiet.a WARNING queue thread: the disk is full",  # no traceback
        "test.quiet.a WARNING queue thread: the disk is full — 2 more like it in the last 0 s",
    ]


def test_an_unknown_failure_keeps_its_traceback_and_its_count(logs: Logs) -> None:
    log = logging.getLogger("test.quiet.a")
    for _ in range(3):
        try:
            raise KeyError("bug")
        except KeyError:
            log.exception("internal error")
    logs.clock.now += 30
    try:
        raise KeyError("bug")
    except KeyError:
        log.exception("internal error")
    text = logs.out.getvalue()
    assert text.count("Traceback (most recent call last)") == 2
    assert "internal error — 2 more like it in the last 30 s\nTraceback" in text


def test_records_below_warning_pass_untouched(logs: Logs) -> None:
    log = logging.getLogger("test.quiet.a")
    for _ in range(3):
        log.info("turn started")
    assert logs.lines() == ["test.quiet.a INFO turn started"] * 3


def test_paused_it_counts_nothing_but_still_shortens_a_known_fault(logs: Logs) -> None:
    log = logging.getLogger("test.quiet.a")
    log.warning("heartbeat failed")
    log.warning("heartbeat failed")
    logs.summary.pause()  # says what it counted
    log.warning("heartbeat failed")
    log.warning("POST: the disk is full\n  details")
    log.warning("POST: the disk is full\n  details")
    logs.summary.resume()
    log.warning("heartbeat failed")
    log.warning("heartbeat failed")
    assert logs.lines() == [
        "test.quiet.a WARNING heartbeat failed",
        "test.quiet.a WARNING heartbeat failed — 1 more like it in the last 0 s",
        "test.quiet.a WARNING heartbeat failed",
        "test.quiet.a WARNING POST: the disk is full",
        "test.quiet.a WARNING POST: the disk is full",
        "test.quiet.a WARNING heartbeat failed",
    ]
