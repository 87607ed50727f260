"""A worker's thread switch interval: 1 ms rather than Python's 5 ms on SQLite, 2 ms on
PostgreSQL.

A thread that wants the interpreter's lock waits up to the switch interval before the holder
is asked to let go. A worker's threads give the lock up at every database call and want it
back at its end: the one thread that writes the turns' events (``writer_lane.py``), a
request's claim, the event loop itself. On a saturated worker each of those waits sat behind
a thread computing, up to 5 ms a time, and the single writer's waits held every turn up. At
1,000 live sessions on SQLite (``bench/scale``, runs on a loaded shared machine) 1 ms took
a worker from 64-67 turns/s to 82-88, and a message's claim (its transaction, in its
thread) from a p95 of 53-68 ms to 36-39, for more switches between threads that compute.

On PostgreSQL there is no single writer: the turns' calls to the store run on the pool's 12
threads, requests' on theirs, DBOS's on its own, a dozen or more threads that want the lock
back after a round trip at any moment. With 1 ms the event loop, computing, was asked to let
go every millisecond and then waited behind them: at 1,000 live sessions a POST's answer
took p95 0.8-1.7 s. With 5 ms a POST took p95 0.16-0.23 s, but each pool thread waited
longer for the lock after its round trips and the worker finished fewer turns (42-50 turns/s
against 40-58); with 2 ms it finished 58-60 turns/s, a POST p95 0.44-0.57 s
(docs/postgres.md, *A worker at 1,000 live sessions*).

``EVE_SWITCH_INTERVAL_MS`` sets it (milliseconds, above 0 and at most 100); ``off`` leaves
Python's.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

from eve._numbers import bounded_setting

SWITCH_ENV = "EVE_SWITCH_INTERVAL_MS"
#: a worker's switch interval, in milliseconds (Python's is 5)
DEFAULT_SWITCH_MS = 1.0
#: a worker's switch interval on PostgreSQL, in milliseconds (see above)
POSTGRES_SWITCH_MS = 2.0
#: the longest interval the setting takes, in milliseconds
MAX_SWITCH_MS = 100.0


def switch_interval_ms(env: Mapping[str, str], *, postgres: bool = False) -> float | None:
    """``EVE_SWITCH_INTERVAL_MS`` read: unset or empty is eve's default for the backend
    (``postgres``: the sessions are in PostgreSQL); ``off`` is None (Python's interval left
    alone)."""
    raw = env.get(SWITCH_ENV, "")
    value = raw.strip().lower()
    if value == "":
        return POSTGRES_SWITCH_MS if postgres else DEFAULT_SWITCH_MS
    if value == "off":
        return None
    note = f"eve's default {DEFAULT_SWITCH_MS:g}, {POSTGRES_SWITCH_MS:g} on PostgreSQL"
    return milliseconds(SWITCH_ENV, raw, most=MAX_SWITCH_MS, note=note)


def milliseconds(name: str, raw: str, *, most: float, note: str) -> float:
    """``raw``, the setting ``name``'s value (not ``off``), as a number of milliseconds above
    0 and at most ``most``; ``ServerConfigError`` naming ``note`` (its default) if it is not
    one. ASCII digits only: ``float`` also reads other scripts' digits."""
    return bounded_setting(name, raw, unit="milliseconds", most=most, note=note, off=True)


def tune_switching(ms: float | None) -> None:
    """Set the worker's switch interval to ``ms``; nothing when it is None."""
    if ms is not None:
        sys.setswitchinterval(ms / 1000)
