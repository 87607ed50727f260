"""Three seams every durable turn passes, timed alone in process: a step part's fresh
attempt (``async with fresh_step``, no listener: a process without memory), a turn's input
read back as its message (``turn_workflow.message_of``) and an event's emission to a sink
that returns None (``EventEmitter.emit``, no hooks), 3, 1 and 16 of them a turn.

Each is timed in rounds of ``CALLS`` calls; the figure is the median of the rounds' CPU
(``time.process_time``) per call, in µs. The seams are eve's public functions, so two
checkouts compare by alternating processes, e.g. under ``flock /work/bench.lock``::

    PYTHONPATH=<checkout> python bench/turn_seams.py --label <name>

It prints one JSON line and writes nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

CALLS, ROUNDS = 2_000, 31


async def _rounds(call: Callable[[], Awaitable[object]], rounds: int) -> float:
    """The median CPU of one ``call`` over ``rounds`` rounds, in µs."""
    spent = []
    for _ in range(rounds):
        started = time.process_time()
        for _ in range(CALLS):
            await call()
        spent.append((time.process_time() - started) / CALLS)
    return round(1e6 * statistics.median(spent), 3)


async def _measure(rounds: int) -> dict[str, Any]:
    from eve._step_attempts import StepAttempt, fresh_step
    from eve.auth.principal import OPERATOR
    from eve.events import SessionWaitingData
    from eve.execution.events import EventEmitter
    from eve.messages import user_message
    from eve.sessions.turn_workflow import message_of, sent_input

    attempt = StepAttempt(step="s_1:turn-3/step:0", session_id="s_1")

    async def fresh() -> None:
        async with fresh_step(attempt):
            pass

    given = sent_input(user_message("go 0.17.3"), OPERATOR)

    async def message() -> None:
        message_of(given)

    kept: list[object] = []
    emitter = EventEmitter(kept.append, session_id="s_1")
    data = SessionWaitingData(turn_id="turn_3")

    async def emit() -> None:
        await emitter.emit(data)
        kept.clear()

    return {
        "fresh_step_us": await _rounds(fresh, rounds),
        "message_of_us": await _rounds(message, rounds),
        "emit_us": await _rounds(emit, rounds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    args = parser.parse_args()
    print(json.dumps({"label": args.label, **asyncio.run(_measure(args.rounds))}))


if __name__ == "__main__":
    main()
