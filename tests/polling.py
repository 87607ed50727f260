"""The pauses between a test's looks at something it waits for: short at first, then longer.

Most waits end within a few hundred milliseconds (an offline turn, a tick's session): a
fixed pause of ``longest`` overshot each by half of it on average, a twentieth of a second
per wait over the hundreds of waits in a run. Doubling from 10 ms finds an early end
sooner, and a long wait still looks no more often than every ``longest`` seconds.
"""

from __future__ import annotations

from collections.abc import Iterator

FIRST_PAUSE = 0.01


def pauses(longest: float) -> Iterator[float]:
    """10 ms, 20 ms, 40 ms… up to ``longest``, then ``longest`` for ever."""
    pause = min(FIRST_PAUSE, longest)
    while True:
        yield pause
        pause = min(pause * 2, longest)
