"""The durability seam's one method: ``StepRecorder.record`` and the kinds of value it keeps.

Everything a turn must not do twice after a crash (a step's part, one call of a parallel
batch, a compaction, an MCP listing, a memory recall) goes through ``record(key, produce,
kind)``: a durable recorder runs ``produce`` the first time and, on recovery, returns what
it recorded without running it (maybe storing it a moment later: ``records_durable``).
``kind`` says how the value reads back: it carries the one typed decoder for its type,
built once, so a recorder never guesses a type.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Generic, Protocol, TypeVar

import msgspec

T = TypeVar("T")


class RecordKind(Generic[T]):
    """A type a recorder stores as JSON (a Struct or a tagged union of Structs)."""

    __slots__ = ("decoder", "name")

    def __init__(self, kind: Any, name: str) -> None:
        #: reads a recorded value back (``msgspec.json.Decoder`` of the type)
        self.decoder: msgspec.json.Decoder[T] = msgspec.json.Decoder(kind)
        #: what the value is, for messages about a record that does not read back
        self.name = name


Produce = Callable[[], Awaitable[T]]


class StepRecorder(Protocol):
    async def record(self, key: str, produce: Produce[T], kind: RecordKind[T]) -> T:
        """The value named ``key`` (unique within the turn): produced now, or as recorded."""
        ...


async def records_durable(recorder: StepRecorder) -> None:
    """Wait until what ``recorder`` recorded is stored, before the turn does what a record
    must come first for (asks a person, starts a task). A recorder may store a record
    after ``record`` returned, with what the turn emits next (``DurableRecorder``: one
    commit a step fewer); one that does has a ``settled`` method, and waits itself before
    its next record runs."""
    settled = getattr(recorder, "settled", None)
    if settled is not None:
        await settled()


class Inline:
    """No durability: produce every value now."""

    async def record(self, key: str, produce: Produce[T], kind: RecordKind[T]) -> T:
        return await produce()
