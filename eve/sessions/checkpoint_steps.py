"""Loading and saving a session's checkpoint inside a workflow: a DBOS step records the load.

DBOS stores every step's output for as long as it keeps the workflow. A load step that
returned the checkpoint would store a full copy of the session's history per turn, and
the tables would grow with the square of a session's length. So the load step records
only the *version* it read (``eve_checkpoints``); the body then reads that version, which
a replay reads again: a recovered workflow starts from exactly what its first run loaded,
since the store keeps that version until the session's next save (``store.py``). A save
after that version is idempotent and needs no step (``save_checkpoint``).
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass

from dbos import DBOS

from eve.sessions.checkpoint import SessionCheckpoint, decode_checkpoint, encode_checkpoint
from eve.sessions.store import SessionStore


@dataclass(frozen=True, kw_only=True)
class Loaded:
    """The checkpoint a workflow started from, and its version (None: recorded by an eve
    that stored the checkpoint itself in the step; its save then follows the current one)."""

    checkpoint: SessionCheckpoint
    version: int | None


async def load_checkpoint(store: SessionStore, session_id: str) -> Loaded:
    """The ``checkpoint.load`` step, and the checkpoint of the version it recorded."""
    read: dict[int, str | None] = {}

    def current() -> int:
        # the step records the version only; the data read with it serves this run, and a
        # replay (the step not run) reads the recorded version's data on its own
        version, read[version] = store.current_checkpoint(session_id)
        return version

    recorded: int | str | None = await DBOS.run_step_async(
        {"name": "checkpoint.load"}, asyncio.to_thread, current
    )
    if isinstance(recorded, int):
        if recorded in read:
            raw = read[recorded]
        else:
            raw = await asyncio.to_thread(store.checkpoint_at, session_id, recorded)
        return Loaded(checkpoint=decode_checkpoint(raw), version=recorded)
    # a workflow an older eve started: its record is the checkpoint's JSON
    return Loaded(checkpoint=decode_checkpoint(recorded), version=None)


async def save_checkpoint(
    store: SessionStore,
    session_id: str,
    checkpoint: SessionCheckpoint | None,
    *,
    after: Loaded | None,
    step: str = "checkpoint.save",
) -> None:
    """Save ``checkpoint`` (None: clear it) as the version after ``after``'s (``after``
    None: after whatever is current, as a reset does).

    A save after a known version writes the same version whenever it runs, and a replay
    of the workflow computes the same checkpoint from the same records, so saving again
    overwrites it with itself: it needs no step of its own (each costs the engine two
    reads and two writes). A save after whatever is current would save a version more
    each time, so it is a step, recorded once.
    """
    data = None if checkpoint is None else encode_checkpoint(checkpoint)
    save = functools.partial(
        store.save_checkpoint, session_id, data, after=None if after is None else after.version
    )
    if after is not None and after.version is not None:
        await asyncio.to_thread(save)
        return
    await DBOS.run_step_async({"name": step}, asyncio.to_thread, save)
