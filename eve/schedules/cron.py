"""Cron expressions: checked once, and read into fire times in a schedule's time zone.

The parser is croniter, the one DBOS's scheduler fires with, so what the compiler accepts
is what fires. Five fields (minute first) are standard cron; six put seconds first, as
DBOS reads them. Time zones come from ``zoneinfo``: a tick at 09:00 in ``Europe/Paris``
stays at 09:00 local time across daylight saving changes.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

#: how many fields a cron may have: minute-first, or seconds-first
FIELD_COUNTS = (5, 6)


def cron_problem(cron: str) -> str | None:
    """Why ``cron`` cannot be a schedule's, or None."""
    fields = cron.split()
    if len(fields) not in FIELD_COUNTS:
        return (
            f"cron {cron!r} has {len(fields)} field(s); write five (minute hour day month "
            "weekday, e.g. '0 9 * * 1-5') or six with seconds first"
        )
    if not croniter.is_valid(_normalized(cron), second_at_beginning=True):
        return f"cron {cron!r} is not a valid cron expression (e.g. '*/15 * * * *')"
    return None


def timezone_problem(name: str) -> str | None:
    """Why ``name`` is no IANA time zone, or None."""
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return f"time zone {name!r} is not an IANA zone name (e.g. 'UTC', 'Europe/Paris')"
    return None


def _normalized(cron: str) -> str:
    """Five fields as DBOS stores them (seconds first): ``0`` seconds prepended, so
    both read the same minutes."""
    fields = cron.split()
    return " ".join(["0", *fields]) if len(fields) == 5 else " ".join(fields)


def dbos_cron(cron: str) -> str:
    """``cron`` in the six-field form DBOS's scheduler is given."""
    return _normalized(cron)


def next_fires(cron: str, timezone: str, after: datetime, count: int) -> list[datetime]:
    """The ``count`` fire times strictly after ``after``, in ``timezone``."""
    it = croniter(_normalized(cron), after.astimezone(ZoneInfo(timezone)), second_at_beginning=True)
    return [it.get_next(datetime) for _ in range(count)]


def latest_missed(cron: str, timezone: str, since: datetime, now: datetime) -> datetime | None:
    """The last fire time in ``(since, now]``: what a catch-up runs once; None if none."""
    it = croniter(_normalized(cron), now.astimezone(ZoneInfo(timezone)), second_at_beginning=True)
    # get_prev is strictly before its start: start a moment after now, so a tick at now counts
    it.set_current(now.astimezone(ZoneInfo(timezone)) + timedelta(microseconds=1))
    previous: datetime = it.get_prev(datetime)
    return previous if previous > since else None
