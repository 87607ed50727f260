"""The sweep of accepted places: what a 202 promised and no workflow is doing gets done.

At start and with every heartbeat, a worker looks at the places accepted a while ago and not
done yet (``accepted.py``):

- still ``accepted``: its session's first unfinished place is started now if nothing
  started it (the request or the body before it could not reach DBOS, or died first);
  a place behind an unfinished one waits for it, as it should;
- ``opening`` (a first turn whose session's open is not recorded): the open is finished if
  nobody holds it (``finish_open``: its holder died), which then starts the turn. A session
  with no row (deleted by hand) has nothing to open: its places nothing runs are marked
  done, with a warning, once, instead of being offered to every sweep;
- ``enqueued``, but its workflow ended without marking it done: if its outcome is in the log
  after all, it is marked done. Otherwise (the workflow was cancelled by hand, crashed more
  often than DBOS retries, or its body failed in a way nothing caught) a turn that no later
  place has overtaken runs again, under a new workflow id that writes into the log under
  the turn's own (``rerun_id``): the turn id stays, so the next message is not
  misnumbered, and what the ended run wrote is not written twice. A turn overtaken, or
  rerun ``MAX_RERUNS`` times already, fails visibly: ``turn.failed`` with ``TurnLost``,
  then ``session.waiting``, so the client hears of it and the session goes on. A reset
  or compaction that ended is only marked done.

A place whose workflow is queued or running is left to DBOS and the engine's own recovery.
Two workers may sweep at once: each change to a place is made only if the place is still
what the sweep read (``claim_rerun``, ``claim_settled``), so one of them makes it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from dbos import DBOS

from eve.errors import TurnLost
from eve.events import SessionEvent, SessionWaitingData, TurnFailedData
from eve.execution.events import EventEmitter
from eve.sessions.accepted import (
    OPENING,
    Cursor,
    Place,
    claim_rerun,
    claim_settled,
    cursor_of,
    drop_rowless,
    later_places,
    reopen,
    unfinished,
)
from eve.sessions.event_log import EventLog, Pending
from eve.sessions.store import SessionStore, TurnProgress

log = logging.getLogger("eve.sessions")

#: a place younger than this may still be delivered by the request that accepted it
GRACE_SECONDS = 2.0
#: how many places one sweep looks at (parked turns are places too)
PAGE = 200
#: how often one turn may run again before it fails visibly
MAX_RERUNS = 2
#: DBOS's statuses of a workflow that runs, or will
_LIVE = frozenset({"ENQUEUED", "PENDING", "DELAYED"})


@dataclass(kw_only=True)
class AcceptedSweep:
    store: SessionStore
    log: EventLog
    #: ``DurableEngine.deliver`` and ``DurableEngine.start``
    deliver: Callable[[str], Awaitable[None]]
    start: Callable[[Place], Awaitable[object]]

    #: where the last sweep stopped; the next one goes on from there, then from the start
    cursor: Cursor | None = None
    #: finishes a session's open nobody holds, for its ``OPENING`` first turn
    #: (``SessionService`` sets it: the open's hooks are the service's; ``opening.take_over``);
    #: False when the session has no row
    finish_open: Callable[[str], Awaitable[bool]] | None = None

    async def run(self) -> None:
        cutoff = time.time() - GRACE_SECONDS
        after = self.cursor
        places = await asyncio.to_thread(
            self.store.run,
            lambda c: unfinished(c, accepted_before=cutoff, after=after, limit=PAGE),
        )
        self.cursor = cursor_of(places[-1]) if len(places) == PAGE else None
        for session_id in sorted({p.session_id for p in places if p.state == "accepted"}):
            await self.deliver(session_id)
        if self.finish_open is not None:
            for session_id in sorted({p.session_id for p in places if p.state == OPENING}):
                if not await self.finish_open(session_id):
                    await self._drop_rowless(session_id)
        queued = [p for p in places if p.state == "enqueued"]
        statuses = await _statuses([p.workflow_id for p in queued])
        for place in queued:
            status = statuses.get(place.workflow_id)
            if status not in _LIVE:
                await self._settle(place, status)

    async def _drop_rowless(self, session_id: str) -> None:
        turns = await asyncio.to_thread(self.store.run, lambda c: drop_rowless(c, session_id))
        if turns:
            log.warning(
                "session %s has no row (deleted?): its turns %s, accepted and never started, "
                "are marked done and will not run",
                session_id,
                ", ".join(f"turn_{turn}" for turn in turns),
            )

    async def _settle(self, place: Place, status: str | None) -> None:
        if status is None:
            # marked enqueued once DBOS had it (and has lost it since, or an older eve
            # marked it so): start it again under the same id rather than lose it
            await self.start(place)
            return
        progress = await asyncio.to_thread(self.store.turn_progress, place.log_id)
        if place.kind != "turn" or progress.finished:
            if await asyncio.to_thread(self.store.run, lambda c: claim_settled(c, place)):
                await self.deliver(place.session_id)  # what waited behind it
            return
        if place.reruns < MAX_RERUNS and not await self._overtaken(place):
            rerun = await asyncio.to_thread(self.store.run, lambda c: claim_rerun(c, place))
            if rerun is not None:
                await self.start(rerun)
                log.warning(
                    "turn %s ended (%s) with no outcome; running it again as %s",
                    place.log_id,
                    status,
                    rerun.workflow_id,
                )
            return
        await self._fail(place, status, progress)

    async def _overtaken(self, place: Place) -> bool:
        """Whether a later place of its session started: running it now would be out of order."""
        later = await asyncio.to_thread(self.store.run, lambda c: later_places(c, place))
        if any(p.state == "done" for p in later):
            return True
        statuses = await _statuses([p.workflow_id for p in later])
        return any(status != "ENQUEUED" for status in statuses.values())

    async def _fail(self, place: Place, status: str, progress: TurnProgress) -> None:
        if not await asyncio.to_thread(self.store.run, lambda c: claim_settled(c, place)):
            return  # another worker's sweep settled it
        turn_id = f"turn_{place.turn}"
        error = TurnLost(
            f"{turn_id} of session {place.session_id} was accepted, but its run ended "
            f"({status}) with no outcome and it could not run again in its place; "
            "send the message again",
            session_id=place.session_id,
            turn_id=turn_id,
        )
        writer = self.log.writer(place.session_id)
        seq = [progress.last_body_seq]

        def sink(event: SessionEvent) -> None:
            # in the body's place, after what it wrote: a replay of it finds its end here
            seq[0] += 1
            writer.add(Pending(event=event, workflow_id=place.log_id, body_seq=seq[0]))

        emitter = EventEmitter(sink, session_id=place.session_id)
        try:
            await emitter.emit(TurnFailedData(turn_id=turn_id, error=f"TurnLost: {error}"))
            await emitter.emit(SessionWaitingData(turn_id=turn_id))
            await writer.flush()
        except Exception:
            self.log.discard(place.session_id, place.log_id)
            await asyncio.to_thread(self.store.run, lambda c: reopen(c, place))
            raise
        self.log.forget(place.session_id)
        await self.deliver(place.session_id)  # what waited behind it
        log.warning(
            "turn %s ended (%s) with no outcome; failed it: %s", place.log_id, status, error
        )


async def _statuses(workflow_ids: list[str]) -> dict[str, str]:
    if not workflow_ids:
        return {}
    found = await DBOS.list_workflows_async(
        workflow_ids=workflow_ids, load_input=False, load_output=False
    )
    return {s.workflow_id: str(s.status) for s in found}
