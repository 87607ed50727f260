"""What each channel kind's probe measures for ``bench/channel_latency.py``.

A kind's probe (``bench/channel_probes/<kind>.py``) exports ``KIND`` (the kind's name),
``OPTIONS`` (the options its channel is declared with) and ``probe(client, path)``: one turn
through the channel, whose answer it reads as the kind's clients would, timing the first
byte of the answer and each event after it.

A kind whose channel carries code (``define_channel``, the ``custom`` kind) exports
``SOURCE`` too: the text of its ``agent/channels/<kind>.py``, which the bench writes instead
of a declaration made from ``OPTIONS``."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx


@dataclass(frozen=True)
class Probe:
    #: seconds from sending the request to the first byte of the answer
    first_byte: float
    #: seconds between consecutive events of the answer (or chunks, for a kind without them)
    gaps: list[float]

    @classmethod
    def of(cls, sent: float, marks: list[float]) -> Probe:
        """The probe of a request sent at ``sent`` whose events arrived at ``marks``
        (``time.perf_counter()`` readings)."""
        if not marks:
            raise ValueError("the answer had no events")
        return cls(first_byte=marks[0] - sent, gaps=[b - a for a, b in itertools.pairwise(marks)])


#: ``client`` has the server's base URL and its bearer token; ``path`` is the channel's path
ProbeFn = Callable[[httpx.AsyncClient, str], Awaitable[Probe]]
