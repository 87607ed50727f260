"""A worker's garbage collector: the heap it starts with frozen, and full collections
(Python's oldest generation) ten times rarer than the interpreter's default.

A full collection stops the whole process (its event loop, every thread) for as long as it
walks every object the collector tracks. A turn's objects live as long as the turn (its
environment, emitter and event writer, seconds), so nearly all of them reach the oldest
generation; they are freed as the turn ends, in no cycle (``tests/sessions/test_turn_garbage.py``),
but the live ones are walked by every full collection. Python starts a full collection after
10 younger ones once the objects promoted since the last one reach a quarter of the
generation: at 1,000 live sessions on SQLite that was every 2.3 s, for 0.5 s each: a quarter
of the worker's time, and every request that arrived meanwhile waited for it (a ``/health``
p95 of 536 ms, ``bench/scale``). With these settings one runs about every 20 s there, and
walks fewer objects (the frozen start-up heap, a quarter of them, is never walked); what
garbage cycles those 20 s leave (a turn left one of about 70 objects before issue 31) waits
for it.

``EVE_GC_FULL_THRESHOLD`` is Python's third threshold (``gc.set_threshold``): how many
collections of the middle generation pass between full ones (eve's default 100, Python's 10);
``off`` leaves the interpreter's collector as it is.
"""

from __future__ import annotations

import gc
from collections.abc import Mapping

from eve.errors import ServerConfigError

FULL_THRESHOLD_ENV = "EVE_GC_FULL_THRESHOLD"
#: middle-generation collections between full ones in a worker (Python's default is 10)
DEFAULT_FULL_THRESHOLD = 100


def full_threshold(env: Mapping[str, str]) -> int | None:
    """``EVE_GC_FULL_THRESHOLD`` read: unset or empty is eve's default; ``off`` is None
    (the interpreter's collector left alone)."""
    raw = env.get(FULL_THRESHOLD_ENV, "")
    value = raw.strip().lower()
    if value == "":
        return DEFAULT_FULL_THRESHOLD
    if value == "off":
        return None
    if not (value.isascii() and value.isdigit()) or int(value) < 1:
        raise ServerConfigError(
            f"{FULL_THRESHOLD_ENV} must be a whole number >= 1 (collections of the middle "
            f"generation between full ones; eve's default {DEFAULT_FULL_THRESHOLD}) or off, "
            f"not {raw!r}"
        )
    return int(value)


def tune_collector(threshold: int | None) -> None:
    """Once a worker has started (its agent resolved, its database open): freeze what is
    alive, and collect the oldest generation every ``threshold`` middle ones; nothing when
    ``threshold`` is None."""
    if threshold is None:
        return
    # what start-up left as garbage is freed first: frozen, it would stay for good
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, threshold)
