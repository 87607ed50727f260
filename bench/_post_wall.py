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
"""

from __future__ import annotations

import os
import time

from eve.server import server_timing
from eve.sessions.claim_now import ClaimTiming


def post_wall() -> None:
    """Adds the wall-clock marks to every POST's ``Server-Timing`` in this process."""
    timing = server_timing.timing

    def walled(answer_seconds: float, claim: ClaimTiming) -> bytes:
        answered = time.time()
        read = answered - answer_seconds
        marks = b', read_at;desc="%.6f", answered_at;desc="%.6f", worker;desc="%d"' % (
            read,
            answered,
            os.getpid(),  # at the call: a worker may be forked after this module's import
        )
        return timing(answer_seconds, claim) + marks

    server_timing.timing = walled
