"""``EVE_BENCH_POST_WALL=1`` (a server setting, through ``--server-env``): where a POST's
time goes outside the server's own clock. The server's ``Server-Timing`` times a POST from
its bytes read off the socket to its answer's head written; a client sees more: the wait
before the worker's event loop read the request (the kernel's queue on a kept-alive
connection, the loop's lag in a worker whose threads hold the interpreter's lock) and the
wait after the answer, until the client's own loop read it. With this setting each POST's
header also says, in wall-clock seconds (one clock on one machine), when its request was read
and its answer written, and which process answered (``read_at``, ``answered_at``, ``worker``:
a ``desc`` each); the clients keep them (``_scale_clients.server_timing``) and the report
splits a POST's time in three (``before_server``, the server's, ``after_server``), by worker.

And when, before the read, the loop last decided between two slices to take a turn of
uvloop's loop (``turn_at``; ``serving_loop.ServingLoop._turn_due``): a request sent before
that decision waited from it to its read for the turn itself (uvloop's poll lets the
interpreter's lock go and waits to have it back behind the worker's threads, then runs the
callbacks ready before the socket's), and before it for the loop to look between slices.
"""

from __future__ import annotations

import os
import time
from collections import deque

from eve.server import server_timing
from eve.server.serving_loop import ServingLoop
from eve.sessions.claim_now import ClaimTiming

#: the loop's last decisions to take a turn (``time.perf_counter``): enough to reach back
#: past a POST's time in the server
_TURNS_KEPT = 4096


def post_wall() -> None:
    """Adds the wall-clock marks to every POST's ``Server-Timing`` in this process."""
    timing = server_timing.timing
    turn_due = ServingLoop._turn_due
    turns: deque[float] = deque(maxlen=_TURNS_KEPT)

    def noted_turn_due(self: ServingLoop, now: float, turn_at: float) -> bool:
        due = turn_due(self, now, turn_at)
        if due:
            turns.append(time.perf_counter())
        return due

    def walled(answer_seconds: float, claim: ClaimTiming) -> bytes:
        answered, answered_perf = time.time(), time.perf_counter()
        read_perf = answered_perf - answer_seconds
        marks = b', read_at;desc="%.6f", answered_at;desc="%.6f", worker;desc="%d"' % (
            answered - answer_seconds,
            answered,
            os.getpid(),  # at the call: a worker may be forked after this module's import
        )
        turn = _last_before(turns, read_perf)
        if turn is not None:
            marks += b', turn_at;desc="%.6f"' % (answered - (answered_perf - turn))
        return timing(answer_seconds, claim) + marks

    ServingLoop._turn_due = noted_turn_due  # type: ignore[method-assign]
    server_timing.timing = walled


def _last_before(turns: deque[float], when: float) -> float | None:
    """The latest of ``turns`` at or before ``when`` (they are in order)."""
    for turn in reversed(turns):
        if turn <= when:
            return turn
    return None
