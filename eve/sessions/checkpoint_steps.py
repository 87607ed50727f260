"""Loading and saving a session's checkpoint inside a workflow, as DBOS steps.

DBOS stores every step's output for as long as it keeps the workflow. A load step that
returned the checkpoint would store a full copy of the session's history per turn, and
the tables would grow with the square of a session's length. So the load step records
only the *version* it read (``eve_checkpoints``); the body then reads that version, which
a replay reads again: a recovered workflow starts from exactly what its first run loaded,
since the store keeps that version until the session's next save (``store.py``).
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
    recorded: int | str | None = await DBOS.run_step_async(
        {"name": "checkpoint.load"}, asyncio.to_thread, store.checkpoint_version, session_id
    )
    if isinstance(recorded, int):
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
    """Save ``checkpoint`` (None: clear it) as the version after ``after``'s, in a step
    (``after`` None: after whatever is current, as a reset does)."""
    data = None if checkpoint is None else encode_checkpoint(checkpoint)
    save = functools.partial(
        store.save_checkpoint, session_id, data, after=None if after is None else after.version
    )
    await DBOS.run_step_async({"name": step}, asyncio.to_thread, save)
