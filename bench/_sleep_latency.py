"""The scale benchmark's model latency: its id, and how long each step of a turn sleeps.

``benchsleep/<seconds>x<steps>`` sleeps exactly ``seconds`` a step. ``benchsleep/<seconds>x
<steps>~<spread>`` draws each step's sleep from a lognormal distribution of mean ``seconds``
whose standard deviation is ``spread`` times the mean (its coefficient of variation):
``benchsleep/2.0x3~0.25`` sleeps 2 s a step on average, with a standard deviation of 0.5 s.

Why a spread: with exactly 2 s a step, sessions that a stall bunched together stay bunched,
and 1,000 of them reach the server in waves (all within a few hundred ms, then nothing for
about 2 s); a real model's latency varies from call to call, which keeps them apart. Why
lognormal: a model call's latency is positive and right-skewed (a floor of time to the first
token, a tail of long answers and queueing), the shape a lognormal has, and its mean can be
set exactly (``mu = ln(mean) - sigma**2 / 2``): a closed loop of N clients can still at best
finish N / (steps * mean) turns a second, so the benchmark's limit stays what it was.

Each draw is a function of the turn's key and the step's index (a hash, not a generator's
state), so a run is reproducible, and the benchmark can tell each turn's model time from the
key alone: the clients send it as their message's text (``go <key>``).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from statistics import NormalDist

from eve.errors import UnknownModel

PREFIX = "benchsleep"
#: the most spread a model may have: beyond a standard deviation of its mean the tail, not
#: the latency, is what a run would measure
MAX_SPREAD = 1.0
#: what the clients' messages start with; the rest is the turn's key
MESSAGE_PREFIX = "go "
_UNIT = NormalDist()
#: a hash's 64 bits as a number in (0, 1), never 0 or 1 (the normal's quantile is infinite there)
_SCALE = 2.0**-64


@dataclass(frozen=True, kw_only=True)
class SleepSpec:
    """What a ``benchsleep`` id says: the mean seconds a step, the steps a turn, the spread."""

    seconds: float
    steps: int
    #: each step's standard deviation over its mean; 0 sleeps exactly ``seconds``
    spread: float = 0.0

    @property
    def model_id(self) -> str:
        """``benchsleep/2.0x3``, or ``benchsleep/2.0x3~0.25`` with a spread."""
        spread = f"~{self.spread}" if self.spread else ""
        return f"{PREFIX}/{self.seconds}x{self.steps}{spread}"

    @property
    def turn_seconds(self) -> float:
        """A turn's model time on average (exactly, with no spread)."""
        return self.seconds * self.steps

    def step_seconds(self, key: str, step: int) -> float:
        """How long step ``step`` (from 0) of the turn ``key`` sleeps."""
        if not self.spread:
            return self.seconds
        sigma = math.sqrt(math.log1p(self.spread**2))
        return self.seconds * math.exp(sigma * _normal(f"{key}/{step}") - sigma**2 / 2)

    def turn_model_seconds(self, key: str) -> float:
        """The model time of the turn ``key``: its steps' sleeps."""
        return sum(self.step_seconds(key, step) for step in range(self.steps))


def _normal(text: str) -> float:
    """A standard normal draw that is a function of ``text``."""
    bits = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
    return _UNIT.inv_cdf((bits + 0.5) * _SCALE)


def parse(name: str) -> SleepSpec:
    """The spec of ``name``, the id without its ``benchsleep/`` prefix: ``2.0x3~0.25``.

    Raises:
        UnknownModel: the id is not ``<seconds>x<steps>[~<spread>]`` with seconds > 0,
            steps ≥ 1 and 0 ≤ spread ≤ 1.
    """
    shape, tilde, spread = name.partition("~")
    seconds, _, steps = shape.partition("x")
    try:
        spec = SleepSpec(
            seconds=float(seconds), steps=int(steps or "1"), spread=float(spread) if tilde else 0.0
        )
    except ValueError:
        raise _bad(name, "not numbers") from None
    if not (math.isfinite(spec.seconds) and spec.seconds > 0):
        raise _bad(name, f"a step's seconds must be a number above 0, not {seconds!r}")
    if spec.steps < 1:
        raise _bad(name, f"a turn takes at least one step, not {steps!r}")
    if not 0 <= spec.spread <= MAX_SPREAD:  # a NaN fails this too
        raise _bad(name, f"the spread must be from 0 to {MAX_SPREAD}, not {spread!r}")
    return spec


def _bad(name: str, why: str) -> UnknownModel:
    model_id = f"{PREFIX}/{name}"
    return UnknownModel(
        f"model {model_id!r}: {why}. Expected {PREFIX}/<seconds>x<steps>[~<spread>], e.g. "
        f"{PREFIX}/2.0x3 (2 s a step, 3 steps a turn) or {PREFIX}/2.0x3~0.25 (each step's "
        "sleep lognormal, mean 2 s, standard deviation 0.25 of the mean)",
        model_id=model_id,
    )


def turn_key(message: str) -> str:
    """The key of the turn a client's message started (its text after ``go ``)."""
    return message.removeprefix(MESSAGE_PREFIX)
