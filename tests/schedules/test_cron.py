"""Cron fire times on a fake clock: time zones, and the one tick a catch-up runs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from eve.schedules.cron import cron_problem, dbos_cron, latest_missed, next_fires

NOON = datetime(2026, 3, 7, 12, 0, tzinfo=UTC)


def test_next_fires_read_the_fields_in_the_schedules_time_zone() -> None:
    # 09:00 in New York is 14:00 UTC before the DST change (Mar 8), 13:00 after it
    fires = next_fires("0 9 * * *", "America/New_York", NOON, 3)
    assert [f.astimezone(UTC).hour for f in fires] == [14, 13, 13]
    assert all(f.hour == 9 for f in fires)


def test_the_latest_missed_tick_is_the_only_one_caught_up() -> None:
    since = NOON - timedelta(days=3)
    assert latest_missed("0 9 * * *", "UTC", since, NOON) == NOON.replace(hour=9)
    # nothing due since the last fire
    assert latest_missed("0 9 * * *", "UTC", NOON.replace(hour=9), NOON) is None
    # a tick due exactly now counts
    assert latest_missed("0 12 * * *", "UTC", since, NOON) == NOON


def test_five_fields_reach_dbos_with_seconds_first() -> None:
    assert dbos_cron("*/5 * * * *") == "0 */5 * * * *"
    assert dbos_cron("*/2 * * * * *") == "*/2 * * * * *"
    assert cron_problem("*/2 * * * * *") is None
    assert cron_problem("@daily") is not None  # one field: not a cron eve reads
