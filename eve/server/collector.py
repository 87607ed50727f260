"""A worker's garbage collector: the heap it starts with frozen, the middle generation
collected at every other collection, and full collections (Python's oldest generation) as
rare as about every 20 s at 1,000 live sessions.

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

The middle generation is collected whenever the young one has been since it was (Python
waits for 10): an object that outlives one young collection is walked once more, at the
next, and then waits in the oldest. The objects a turn keeps past a young collection live
seconds, as the turn does, so they reach the oldest generation whatever the thresholds; with
Python's 10 each was walked twice on the way (the middle collection there walked 10,000 to
22,000 objects, 13 to 20 ms of CPU, three or four times a second, and freed about a dozen),
now it is one and a half times on average, in pauses of 2 to 3 ms of CPU, and the young and
middle collections take about a fifth less CPU (``docs/sessions.md``). A middle
threshold of 50 made the pauses longer and saved nothing, as the young threshold's tenfold
did: what lives seconds is walked whatever the spacing.

``EVE_GC_FULL_THRESHOLD`` is Python's third threshold (``gc.set_threshold``): how many
collections of the middle generation pass between full ones (eve's default 500: with a
middle collection at every other young one, about as often as 100 were with Python's middle
threshold of 10); ``off`` leaves the interpreter's collector as it is. From Python 3.14 the
collector is incremental: its second threshold is how fast the old generation is scanned
(left as it is here) and its third is ignored.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Mapping

from eve.errors import ServerConfigError

FULL_THRESHOLD_ENV = "EVE_GC_FULL_THRESHOLD"
#: middle-generation collections between full ones in a worker (Python's default is 10)
DEFAULT_FULL_THRESHOLD = 500
#: young collections between middle ones in a worker: none (Python's default is 10)
MIDDLE_THRESHOLD = 0


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
    alive, collect the middle generation at every other young collection, and the oldest
    every ``threshold`` middle ones; nothing when ``threshold`` is None."""
    if threshold is None:
        return
    # what start-up left as garbage is freed first: frozen, it would stay for good
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    if sys.version_info < (3, 14):  # 3.14's collector is incremental: its middle differs
        middle = MIDDLE_THRESHOLD
    gc.set_threshold(young, middle, threshold)
