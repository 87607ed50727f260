"""What a request leaves behind once it is answered (starting its turn): marked so that the
worker's threads and DBOS's writes treat it as the turns' work, not as what an answer waits
on, while it keeps the request's fail-fast rules (``database_errors.fail_fast``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

_AFTER_ANSWER: ContextVar[bool] = ContextVar("eve_after_answer", default=False)


@contextlib.contextmanager
def after_answer() -> Iterator[None]:
    """Around work a request left behind once answered (and in the threads
    ``asyncio.to_thread`` starts from it): it runs on the turns' pool, since the requests'
    lane is for what an answer waits on (``thread_lanes.py``), and its write of DBOS's
    start may join other workflows' (``dbos_writes.py``)."""
    token = _AFTER_ANSWER.set(True)
    try:
        yield
    finally:
        _AFTER_ANSWER.reset(token)


def answered_already() -> bool:
    """Whether this is work a request left behind once answered (``after_answer``)."""
    return _AFTER_ANSWER.get()
