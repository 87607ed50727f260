"""Several waiting calls of the loop's claims sent as one statement: one round trip and one
commit for a burst of messages (``pg_claim_now.PgLoopClaims``).

A worker's claims on PostgreSQL share eight connections of the loop's. When a burst finds
them all out, each claim waited for one to come back, and a connection came back only
once its answer was read at a turn of the loop: a burst of a hundred claims on eight
connections waited a dozen turns of a loop that, two workers to two shared cores, turned
every 30 to 60 ms; at 1,000 sessions claims waited 0.3 to 1 s for a connection while the
calls themselves took 2 to 60 ms (p50; ``docs/sessions.md``, *Back-pressure*). So a
connection that comes back takes every waiting call of the same function (up to ``MOST``)
at once: ``SELECT 0, c.* FROM (call 0) AS c UNION ALL SELECT 1, c.* FROM (call 1) AS c
…``, each call's parameters renumbered after the ones before it. The statement is one
transaction: its calls commit together or not at all (an error in one leaves them all to
a request's thread, nothing committed, as an error of a call alone does).

A call's first parameter is its session (``CALL_PARAMS`` of both functions): two calls of
one session are never in one statement (the second waits for the next), and a statement
runs its calls in the order of their sessions, so two statements lock their sessions' rows
in the same order and cannot deadlock on them.
"""

from __future__ import annotations

import asyncio
import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from eve.sessions.claim_now import NotNow

#: calls in one statement at most (12 or 13 parameters each)
MOST = 32
#: a ``$n`` placeholder of a call
_PLACEHOLDER = re.compile(rb"\$(\d+)")

#: a call's answer: its rows, each value as text (None for NULL)
Rows = list[list[str | None]]


@dataclass(frozen=True, kw_only=True)
class Rode:
    """What a call that rode in another's statement got: its rows, or ``NOT_NOW`` (nothing
    of it committed; the call that led it counted why)."""

    answer: Rows | NotNow


@dataclass(eq=False, kw_only=True)
class Waiting:
    """A call waiting for a connection of the loop's: handed one to run itself and the
    calls that ride with it (``riders``), None (the one it waited for was dropped), or
    ``Rode`` once a statement it rode in was answered."""

    command: bytes
    params: list[bytes | None]
    handed: asyncio.Future[Any] | None = None
    #: the calls it runs with its own, once handed a connection
    riders: list[Waiting] = field(default_factory=list)

    @property
    def session(self) -> bytes | None:
        return self.params[0]


def riders_for(leader: Waiting, queue: deque[Waiting], *, most: int = MOST) -> list[Waiting]:
    """The calls of ``queue`` (in their order) that ride with ``leader``: the same function,
    each of another session, ``most`` calls in all at most; they leave ``queue``."""
    taken: list[Waiting] = []
    sessions = {leader.session}
    kept: list[Waiting] = []
    for waiting in queue:
        still = waiting.handed is not None and not waiting.handed.done()
        rides = waiting.command == leader.command and waiting.session not in sessions
        if still and rides and len(taken) < most - 1:
            taken.append(waiting)
            sessions.add(waiting.session)
        elif still:
            kept.append(waiting)
    queue.clear()
    queue.extend(kept)
    return taken


def statement(calls: Sequence[Waiting]) -> tuple[bytes, list[bytes | None]]:
    """One statement running ``calls`` in their sessions' order, each row led by the call's
    position in ``calls``; its parameters."""
    order = sorted(range(len(calls)), key=lambda n: calls[n].session or b"")
    parts: list[bytes] = []
    params: list[bytes | None] = []
    for n in order:
        command = _renumbered(calls[n].command, after=len(params))
        parts.append(b"SELECT %d, c.* FROM (%s) AS c" % (n, command))
        params += calls[n].params
    return b" UNION ALL ".join(parts), params


def _renumbered(command: bytes, *, after: int) -> bytes:
    """``command`` with each ``$n`` made ``$(n + after)``."""
    return _PLACEHOLDER.sub(lambda m: b"$%d" % (int(m[1]) + after), command)


def answers(rows: Rows, count: int) -> list[Rows]:
    """The rows of ``statement``'s answer, by call (position in its ``calls``)."""
    found: list[Rows] = [[] for _ in range(count)]
    for row in rows:
        position = row[0]
        assert position is not None, "each row leads with its call's position"
        found[int(position)].append(row[1:])
    return found
