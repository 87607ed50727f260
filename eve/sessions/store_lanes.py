"""Which lane a worker gives a call of the store: each method declares its own.

``thread_lanes.py`` sorts a worker's calls as they are submitted, and on SQLite a call of the
store goes where its method's declaration says. It said it by name once (a list of the
methods that only read), so a new or renamed method landed in the writer's lane, or worse a
writer in the readers', with nothing to say so; now a method without a declaration fails a
test (``tests/sessions/test_store_lanes.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

#: ``read``: only reads; four threads of their own, never the writer's.
#: ``write``: writes, and may run again (``db_retry.retried``): the writer lane may run it
#: with other such writes in one transaction (``group_commit.py``).
#: ``alone``: writes, and must not run twice (a callback of its enqueues a turn in DBOS):
#: the writer lane runs it once, in transactions of its own, as a call of its own.
Lane = Literal["read", "write", "alone"]

_DECLARED = "eve_store_lane"


def lane(kind: Lane) -> Callable[[F], F]:
    """Declare the lane of the store method it decorates (outermost, or under ``retried``:
    its wrapper keeps the mark)."""

    def declare(method: F) -> F:
        setattr(method, _DECLARED, kind)
        return method

    return declare


def lane_of(method: Callable[..., Any]) -> Lane | None:
    """The lane ``method`` (a store method, bound or not) declared; None if it declared
    none."""
    found: Lane | None = getattr(method, _DECLARED, None)
    return found
