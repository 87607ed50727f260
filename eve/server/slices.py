"""``EVE_REQUEST_SLICE_MS``: how long a worker's loop runs the turns' work before it asks
whether a request waits on its sockets (``serving_loop.py``), in milliseconds; 2 unless set
(on PostgreSQL without a message's claim on the loop, off unless set: ``slices_for_backend``);
``off`` runs uvloop's own loop, where a request waits behind every ready callback.

On by default since the loop asks its request sockets between two slices without letting
the interpreter's lock go (``request_sockets.py``) and takes a turn of uvloop's loop only
when a request needs one: measured at 1,000 sessions on SQLite (4 alternating pairs against
the loop without slices), a POST's p95 went from 198-402 ms to 22-25 ms, for 0.78, 0.95,
0.98 and 1.00 of the turns per second (median 0.965). With a turn after every slice, as
before, the slices cost 15 to 25 % of the turns per second (``docs/sessions.md``,
*Back-pressure*).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from eve.server.switching import milliseconds

SLICE_ENV = "EVE_REQUEST_SLICE_MS"
#: the slice measured (``docs/sessions.md``), in milliseconds: a worker's unless set
DEFAULT_SLICE_MS = 2.0
#: the longest slice the setting takes, in milliseconds
MAX_SLICE_MS = 1000.0


def slice_given(env: Mapping[str, str]) -> str | None:
    """``EVE_REQUEST_SLICE_MS`` as given, or None when it is unset or empty."""
    raw = env.get(SLICE_ENV, "").strip()
    return raw or None


def slice_ms(env: Mapping[str, str]) -> float | None:
    """``EVE_REQUEST_SLICE_MS`` read: unset or empty is ``DEFAULT_SLICE_MS``; ``off`` is None
    (no slices: requests wait behind the turns' work, as on uvloop's own loop)."""
    raw = slice_given(env)
    if raw is None:
        return DEFAULT_SLICE_MS
    if raw.lower() == "off":
        return None
    note = f"eve's default {DEFAULT_SLICE_MS:g}"
    return milliseconds(SLICE_ENV, raw, most=MAX_SLICE_MS, note=note)


def slices_for_backend(
    loop: asyncio.AbstractEventLoop,
    *,
    postgres: bool,
    env: Mapping[str, str],
    claims_on_loop: bool = False,
) -> None:
    """Stop ``loop``'s slices (a ``ServingLoop``'s) on PostgreSQL unless
    ``EVE_REQUEST_SLICE_MS`` is given or a message's claim runs on the loop
    (``claims_on_loop``: ``eve/sessions/pg_claim_now.py``). With the claim in a thread they
    cost 43 % of the turns per second at 500 sessions (one pair measured,
    ``docs/sessions.md``, *Back-pressure*): the loop took a turn after every slice while
    a claim was out. With the claim on the loop, its answer is a socket the loop asks
    between slices, and a POST's p95 went from 0.6 s to 54 ms at 500 sessions with no
    fewer turns per second (docs/postgres.md, *A message's claim in one round trip*)."""
    stop_slicing = getattr(loop, "stop_slicing", None)
    if postgres and not claims_on_loop and stop_slicing is not None and slice_given(env) is None:
        stop_slicing()
