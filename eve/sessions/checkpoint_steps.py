"""Loading and saving a session's checkpoint inside a workflow, with no DBOS step.

A body reads the checkpoint it starts from with its progress (``store.turn_progress``), in
one read. A replay must start from what its first run loaded, even when that run already
saved the next version: each save names the workflow that made it (``saved_by``), and a
body that finds its own save current starts from the version before, which the store keeps
until the session's next save (``store.py``). A session's workflows run one at a time, so
nothing else saves in between. A save after a known version is idempotent and needs no
step either (``save_checkpoint``).

A workflow an older eve started recorded the version it loaded as a DBOS step
(``checkpoint.load``), its first operation: such a body (``TurnProgress.legacy_steps``)
reads it back the same way, so its later operations keep their numbers.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass

from dbos import DBOS

from eve.sessions.checkpoint import SessionCheckpoint, decode_checkpoint, encode_checkpoint
from eve.sessions.checkpoint_carry import CarriedCheckpoints
from eve.sessions.durable_steps import LOAD_STEP
from eve.sessions.store import CheckpointSave, SessionStore, TurnProgress


@dataclass(frozen=True, kw_only=True)
class Loaded:
    """The checkpoint a workflow started from, and its version (None: recorded by an eve
    that stored the checkpoint itself in the step; its save then follows the current one)."""

    checkpoint: SessionCheckpoint
    version: int | None


async def load_checkpoint(
    store: SessionStore,
    session_id: str,
    progress: TurnProgress,
    *,
    carried: CarriedCheckpoints | None = None,
) -> Loaded:
    """The checkpoint the body whose ``progress`` this is starts from (read with it); the
    one this worker's last turn of the session saved, if ``carried`` kept it."""
    if progress.legacy_steps:
        return await _recorded_load(store, session_id)
    start = progress.checkpoint
    assert start is not None, "the body read its progress with the checkpoint"
    kept = carried.take(session_id, start) if carried is not None else None
    checkpoint = kept if kept is not None else decode_checkpoint(start.data)
    return Loaded(checkpoint=checkpoint, version=start.version)


async def _recorded_load(store: SessionStore, session_id: str) -> Loaded:
    """An older eve's ``checkpoint.load`` step, replayed: the version it recorded."""

    def current() -> int:
        # what the older eve's step did; a body is legacy only once its load is recorded
        return store.checkpoint_version(session_id)

    recorded: int | str | None = await DBOS.run_step_async(
        {"name": LOAD_STEP}, asyncio.to_thread, current
    )
    if isinstance(recorded, int):
        raw = await asyncio.to_thread(store.checkpoint_at, session_id, recorded)
        return Loaded(checkpoint=decode_checkpoint(raw), version=recorded)
    # a workflow an even older eve started: its record is the checkpoint's JSON
    return Loaded(checkpoint=decode_checkpoint(recorded), version=None)


def saving(
    session_id: str, checkpoint: SessionCheckpoint | None, *, after: Loaded
) -> CheckpointSave | None:
    """The save of ``checkpoint`` as the version after ``after``'s, as work for a transaction
    of the caller's (a turn's end writes it with its last events: ``TurnEvents.ending``);
    None when ``after`` has no version, and the save must be a step (``save_checkpoint``).

    A save after a known version writes the same version whenever it runs, and a replay
    of the workflow computes the same checkpoint from the same records, so saving again
    overwrites it with itself: it needs no step of its own (each costs the engine two
    reads and two writes). It names the workflow saving it, which a replay reads back
    (the module docstring).
    """
    if after.version is None:
        return None
    data = None if checkpoint is None else encode_checkpoint(checkpoint)
    return CheckpointSave(
        session_id=session_id, version=after.version + 1, data=data, saved_by=DBOS.workflow_id
    )


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

    A save after a known version needs no step (``saving``). A save after whatever is
    current would save a version more each time, so it is a step, recorded once.
    """
    if after is not None and (save := saving(session_id, checkpoint, after=after)) is not None:
        await asyncio.to_thread(store.run, save)
        return
    data = None if checkpoint is None else encode_checkpoint(checkpoint)
    clear = functools.partial(store.save_checkpoint, session_id, data, after=None)
    await DBOS.run_step_async({"name": step}, asyncio.to_thread, clear)
