"""The CPU the event log spends redacting its rows: each row alone against a batch at once.

The event log redacts every row it writes (``SessionWriter._rows_of``). It called ``redact``
once a row, which looks up the secrets' spellings (the secret variables in ``os.environ``)
each time; ``redact_all`` looks them up once a batch and replaces each spelling in one
call over the batch's rows joined. Both run here over the same batches of event payloads
(rows shaped as a turn's: a step's start and end, a message, a tool call and its result),
in alternating rounds, with one secret variable set as ``eve serve`` has its token; the
figures are medians of the rounds' CPU (``time.process_time_ns``) per row.

Run with ``python -m bench.event_redaction [--quick]``; it prints its table and writes
nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable, Sequence

from eve._redact import redact, redact_all

ROUNDS, QUICK_ROUNDS = 41, 5
#: batches a round, of each size
BATCHES = 2000
#: the event log's batches: a turn's 16 rows came in 4 commits
SIZES = (1, 4, 8, 16)
TOKEN = "bench-event-redaction-token-0123456789"


def payloads() -> list[str]:
    """Rows shaped as a turn's events (their JSON, as the log stores it)."""
    meta = {"id": "evt_01JABCDEF0123456789ABCDEFG", "at": "2026-12-06T11:30:00.123456Z"}
    kinds = [
        {"type": "step.started", "data": {"turn_id": "turn_3", "step_index": 1}},
        {"type": "message.appended", "data": {"turn_id": "turn_3", "message_delta": "done"}},
        {
            "type": "actions.requested",
            "data": {"turn_id": "turn_3", "calls": [{"id": "call_1", "name": "noop", "args": {}}]},
        },
        {
            "type": "action.result",
            "data": {"turn_id": "turn_3", "call_id": "call_1", "content": "ok", "ok": True},
        },
        {
            "type": "step.completed",
            "data": {"turn_id": "turn_3", "usage": {"input_tokens": 120, "output_tokens": 8}},
        },
    ]
    return [
        json.dumps({**kind, "meta": {**meta, "index": i}}, separators=(",", ":"))
        for i, kind in enumerate(kinds * 4)
    ]


def _each(batch: list[str]) -> list[str]:
    return [redact(row) for row in batch]


def _round(redactor: Callable[[list[str]], list[str]], batches: Sequence[list[str]]) -> float:
    """CPU ns a row over all of ``batches``."""
    start = time.process_time_ns()
    for batch in batches:
        redactor(batch)
    return (time.process_time_ns() - start) / sum(map(len, batches))


def measure(rounds: int) -> dict[int, tuple[float, float]]:
    rows = payloads()
    found: dict[int, tuple[float, float]] = {}
    for size in SIZES:
        batches = [rows[i % len(rows) :][:size] or rows[:size] for i in range(BATCHES)]
        assert all(_each(b) == redact_all(b) for b in batches[:50])
        each: list[float] = []
        together: list[float] = []
        for _ in range(rounds):
            each.append(_round(_each, batches))
            together.append(_round(redact_all, batches))
        found[size] = (statistics.median(each), statistics.median(together))
    return found


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.event_redaction", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    args = parser.parse_args(argv)
    os.environ["EVE_API_TOKEN"] = TOKEN
    load = os.getloadavg()[0]
    print(f"1-minute load at start: {load:.2f}")
    print("| rows a batch | each row alone, µs a row | the batch at once, µs a row | ratio |")
    print("|---|---|---|---|")
    for size, (each, together) in measure(QUICK_ROUNDS if args.quick else ROUNDS).items():
        print(f"| {size} | {each / 1000:.2f} | {together / 1000:.2f} | {together / each:.2f} |")


if __name__ == "__main__":
    main()
