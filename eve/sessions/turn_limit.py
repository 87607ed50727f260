"""How many places (turns, resets, compactions) run at once in this worker: past saturation
the rest wait as what they already are, accepted places, and start as capacity frees.

A worker is one event loop. Past the CPU it has, starting more turns finishes no more of
them: each started turn adds its callbacks to the loop's ready queue, every callback waits
behind all the others, and a request's answer (``/health``, a message's ``202``) waits
there too: at 1,000 live sessions on SQLite a POST took 261 ms at p95 and the loop lagged
127 ms. Held back here instead, a place costs nothing: its row is durable since its 202
(``accepted.py``), and it is in memory only as an entry of a first-in, first-out queue.

The limit (``EVE_TURN_LIMIT``) is ``off`` by default. A number is a fixed limit; ``auto``
an additive-increase, multiplicative-decrease one (``AdaptiveLimit``): none until the
worker saturates, then, at each look (a quarter of a second), a loop lagging over
``TARGET_LAG_SECONDS`` while the process uses over ``BUSY_TARGET`` of a core cuts it to
nine tenths of what runs (once what runs has come down to the last cut: a cut takes effect
only as turns end), and a look under either raises it by a twentieth while places wait for
it. The CPU condition keeps a loop that lags because the machine's CPU is taken by other
processes from starving its own turns: lag alone cut a worker on this loaded machine to 46
turns/s where it ran 117. Parked turns count as running (a turn waits for a person in its
workflow's ``recv``) and need no rule of their own: they make no lag, so the limit grows
past them while places wait; a fixed limit counts them too. Why not ``auto`` by default:
measured (``bench/scale``, SQLite, 1,000 sessions, a shared machine) the loop's own thread
computes only about half the time at saturation; its lag is the interpreter's lock, which
the worker's threads (SQLite's writes, requests' claims) hold the other half, and a limit
that kept the lag low (10 ms) cost over a quarter of the turns per second (85 where the
base ran 120) for about half the POST p95 (142 ms where it was 261).

What holds:

- a session's order: only a session's first unfinished place is ever offered here
  (``accepted.accept``, ``finish_and_next``), so a session never has two here at once;
- no session starves: places start in the order they were offered, whatever their session;
- nothing is lost: a held place is ``accepted`` in the store; a worker that stops or dies
  leaves it to the sweep of the next start (``accepted_sweep.py``), which this worker's own
  sweep skips while it holds it (``holds``). Another worker's sweep may start it first after
  the sweep's grace: DBOS runs a workflow id once, so its start here is then a no-op;
- back-pressure: held places count in the queue ``EVE_MAX_QUEUED_TURNS`` bounds (they are
  accepted and not delivered: ``admission.py``).
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from eve.sessions.accepted import Place
from eve.sessions.settings import TurnLimitSetting

#: the loop's mean lag over a look (seconds) past which fewer places run
TARGET_LAG_SECONDS = 0.015
#: the cores' worth of CPU the worker's process uses (every thread: they share the
#: interpreter's lock with the loop) past which it is saturated
BUSY_TARGET = 0.85
#: the probe's sleep, and probes per look: the lag is the mean of a look's probes
PROBE_SECONDS = 0.05
PROBES = 5
#: the limit never falls under this: a loop that lags for some other reason (a sync call, a
#: burst of requests) still runs this many places
FLOOR = 16
#: a look over target cuts the limit to this share of what runs
DECREASE = 0.9
#: a look under target with places waiting raises it by this share (at least one)
INCREASE = 0.05


class StartSoon(Protocol):
    """``DurableEngine.start_soon``: start ``place``; ``ended`` once its body is done here
    (at once when it did not start here)."""

    def __call__(
        self,
        place: Place,
        context: contextvars.Context | None = None,
        *,
        ended: Callable[[], None] | None = None,
    ) -> None: ...


@dataclass(kw_only=True)
class AdaptiveLimit:
    """The limit ``auto`` sets from the loop's lag (pure: ``look`` takes what was seen)."""

    #: places that may run at once; infinite until the loop first lags
    limit: float = math.inf
    target: float = TARGET_LAG_SECONDS
    busy_target: float = BUSY_TARGET
    floor: int = FLOOR

    def look(self, lag: float, *, busy: float, running: int, waiting: int) -> None:
        """Set the limit from a look: the loop's mean ``lag``, the share of the look its
        thread computed (``busy``), and the places running and waiting now."""
        # a loop that lags while its thread is not busy waits for the machine's CPU (other
        # processes have it), not for its own turns: fewer turns would only finish fewer
        if lag > self.target and busy > self.busy_target:
            # a cut takes effect only as running turns end (seconds): until as few run as
            # the last cut allows, cutting again would only overshoot
            if running <= self.limit:
                # from what runs, not from an infinite or unreached limit: it bites at once
                self.limit = max(self.floor, math.floor(running * DECREASE))
        elif waiting and running >= self.limit:
            self.limit += max(1, math.floor(self.limit * INCREASE))


@dataclass(kw_only=True)
class TurnLimit:
    """The places this worker starts, at most ``limit`` running, the rest held in order."""

    start: StartSoon
    setting: TurnLimitSetting = "off"
    #: places started here whose body has not ended
    running: int = 0
    adaptive: AdaptiveLimit = field(default_factory=AdaptiveLimit)
    _held: deque[tuple[Place, contextvars.Context | None]] = field(default_factory=deque)
    _holding: set[str] = field(default_factory=set)

    @property
    def limit(self) -> float:
        match self.setting:
            case "auto":
                return self.adaptive.limit
            case "off":
                return math.inf
            case int(fixed):
                return fixed

    @property
    def waiting(self) -> int:
        """Places held now."""
        return len(self._held)

    def holds(self, session_id: str) -> bool:
        """Whether a place of ``session_id`` waits here (the sweep leaves it alone)."""
        return session_id in self._holding

    def offer(self, place: Place, context: contextvars.Context | None = None) -> None:
        """Start ``place`` now if the limit allows and nothing waits before it, else hold it."""
        if self._held or self.running >= self.limit:
            self._held.append((place, context))
            self._holding.add(place.session_id)
            return
        self._run(place, context)

    def _run(self, place: Place, context: contextvars.Context | None) -> None:
        self.running += 1
        self.start(place, context, ended=self._ended)

    def _ended(self) -> None:
        self.running -= 1
        self.release()

    def release(self) -> None:
        """Start what waits, oldest first, while the limit allows."""
        while self._held and self.running < self.limit:
            place, context = self._held.popleft()
            self._holding.discard(place.session_id)
            self._run(place, context)

    async def control(self) -> None:
        """``auto``: look at the loop's lag and set the limit, for as long as the worker runs."""
        if self.setting != "auto":
            return
        loop = asyncio.get_running_loop()
        while True:
            lag, began, computed = 0.0, loop.time(), time.process_time()
            for _ in range(PROBES):
                asked = loop.time()
                await asyncio.sleep(PROBE_SECONDS)
                lag += loop.time() - asked - PROBE_SECONDS
            busy = (time.process_time() - computed) / max(loop.time() - began, PROBE_SECONDS)
            self.adaptive.look(lag / PROBES, busy=busy, running=self.running, waiting=self.waiting)
            self.release()
