"""The CPU a turn spends on the checkpoint it starts from: decoded, against kept decoded.

A turn starts from its session's checkpoint, the whole history. It decoded the stored text
every time; now it takes the checkpoint the session's last turn in this worker saved
(``eve/sessions/checkpoint_carry.py``) when that is the text the store holds. Both run
here on checkpoints shaped as the scale benchmark's sessions (each turn a message, two
calls of a ``noop`` tool with their results, an answer) of 5, 20 and 100 turns, in
alternating rounds; the figures are medians of the rounds' CPU (``time.process_time_ns``)
per load, and the objects the collector tracks that each load makes.

Run with ``python -m bench.checkpoint_carry [--quick]``; it prints its table and writes
nothing.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable

from eve.messages import (
    AssistantMessage,
    Message,
    TextPart,
    ToolCallPart,
    ToolResultMessage,
    user_message,
)
from eve.sessions.checkpoint import SessionCheckpoint, decode_checkpoint, encode_checkpoint
from eve.sessions.checkpoint_carry import CarriedCheckpoints
from eve.sessions.store import CheckpointSave, StartingCheckpoint

ROUNDS, QUICK_ROUNDS = 31, 5
#: loads a round
LOADS = 500
HISTORIES = (5, 20, 100)


def history(turns: int) -> list[Message]:
    """A session's messages after ``turns`` turns of the scale benchmark's agent."""
    messages: list[Message] = []
    for turn in range(turns):
        messages.append(user_message(f"go 0.17.{turn}"))
        for step in range(2):
            call = f"call_{step}"
            messages.append(AssistantMessage(parts=[ToolCallPart(id=call, name="noop", input={})]))
            parts = [TextPart(text="ok")]
            messages.append(ToolResultMessage(tool_call_id=call, parts=parts, name="noop"))
        messages.append(AssistantMessage(parts=[TextPart(text="done")]))
    return messages


def _cpu_per_load(load: Callable[[], object]) -> float:
    start = time.process_time_ns()
    for _ in range(LOADS):
        load()
    return (time.process_time_ns() - start) / LOADS / 1000


def _tracked_by(load: Callable[[], object]) -> int:
    gc.collect()
    gc.disable()  # no collection may move them out of the youngest generation meanwhile
    try:
        before = len(gc.get_objects(generation=0))
        kept = load()
        made = len(gc.get_objects(generation=0)) - before
    finally:
        gc.enable()
    del kept
    return made


def measure(turns: int, rounds: int) -> dict[str, float]:
    checkpoint = SessionCheckpoint(messages=history(turns), turns=turns)
    data = encode_checkpoint(checkpoint)
    save = CheckpointSave(session_id="ses_a", version=turns, data=data, saved_by="wf")
    start = StartingCheckpoint(version=turns, data=data)
    carried = CarriedCheckpoints()

    def kept() -> object:
        # what a turn's end and the next turn's load do, as each turn does them
        carried.keep(save, checkpoint)
        return carried.take("ses_a", start)

    def decoded() -> object:
        return decode_checkpoint(data)

    figures: dict[str, list[float]] = {"decoded": [], "kept": []}
    for index in range(rounds):
        order = [("decoded", decoded), ("kept", kept)]
        for name, load in order if index % 2 == 0 else order[::-1]:
            figures[name].append(_cpu_per_load(load))
    return {
        "chars": len(data),
        "decoded_us": statistics.median(figures["decoded"]),
        "kept_us": statistics.median(figures["kept"]),
        "decoded_objects": _tracked_by(decoded),
        "kept_objects": _tracked_by(kept),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds: a smoke test")
    rounds = QUICK_ROUNDS if parser.parse_args().quick else ROUNDS
    print("| history | stored text | decoded µs | kept µs | objects made: decoded | kept |")
    print("|---|---|---|---|---|---|")
    for turns in HISTORIES:
        row = measure(turns, rounds)
        print(
            f"| {turns} turns | {row['chars']:,.0f} chars | {row['decoded_us']:.2f} "
            f"| {row['kept_us']:.2f} | {row['decoded_objects']:.0f} | {row['kept_objects']:.0f} |"
        )


if __name__ == "__main__":
    main()
