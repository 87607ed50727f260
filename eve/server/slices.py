"""``EVE_REQUEST_SLICE_MS``: how long a worker's loop runs the turns' work between two looks
at its sockets (``serving_loop.py``), in milliseconds; unset, empty or ``off`` runs uvloop's
own loop, where a request waits behind every ready callback.

Off by default: shorter turns of the loop answer requests sooner and cost turns per second,
since the loop lets the interpreter's lock go each time it looks at its sockets and waits to
have it back behind the worker's threads. Measured at 1,000 sessions on SQLite (a loaded
shared machine), 2 ms took a POST's p95 from 330-930 ms to 55-57 ms, for 85 turns/s where
the base ran 88-116 (median 91) and 10.5 ms of CPU a turn where it took 8.6
(``docs/sessions.md``, *Back-pressure*).
"""

from __future__ import annotations

from collections.abc import Mapping

from eve.server.switching import milliseconds

SLICE_ENV = "EVE_REQUEST_SLICE_MS"
#: the slice measured (``docs/sessions.md``), in milliseconds: what a ``ServingLoop`` runs
#: unless told
DEFAULT_SLICE_MS = 2.0
#: the longest slice the setting takes, in milliseconds
MAX_SLICE_MS = 1000.0


def slice_ms(env: Mapping[str, str]) -> float | None:
    """``EVE_REQUEST_SLICE_MS`` read: unset, empty or ``off`` is None (no slices: requests
    wait behind the turns' work, as on uvloop's own loop)."""
    raw = env.get(SLICE_ENV, "")
    value = raw.strip().lower()
    if value in ("", "off"):
        return None
    note = f"off unless set; measured: {DEFAULT_SLICE_MS:g}"
    return milliseconds(SLICE_ENV, raw, most=MAX_SLICE_MS, note=note)
