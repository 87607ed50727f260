"""The session facade a channel works through, bound to the principal it serves."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from sqlalchemy.engine import Connection

from eve._session_summary import SessionSummary
from eve.auth import Principal
from eve.channels.log_index import (
    OpenRequest,
    askers,
    first_index,
    latest_turn_workflow,
    log_end,
    open_requests,
)
from eve.errors import SessionNotFound
from eve.messages import UserMessage
from eve.sessions import Accepted, InputResponse, SessionService
from eve.sessions.checkpoint import decode_checkpoint
from eve.sessions.store import SessionRow
from eve.sessions.turn_workflow import turn_id_of, turn_workflow_id

#: what every session id starts with (``sessions.service.new_session_id``)
SESSION_ID_PREFIX = "ses_"
#: how ``define_state`` names its slot's context key (``eve.context.state``)
STATE_PREFIX = "state:"

T = TypeVar("T")


class ChannelSessions:
    """``SessionService``'s operations as ``principal`` may use them. Every channel goes
    through here, so the rules of who may see and do what hold for every door alike.

    ``acting`` is the person a channel acts for (a Slack user in a thread the channel
    owns): what may be seen and done is still ``principal``'s, but the turns it sends are
    sent by ``acting`` (their ``ctx.principal`` and the asker of their input requests) and
    the answers it gives are given by ``acting``, who must be allowed to answer them."""

    def __init__(
        self, service: SessionService, principal: Principal, *, acting: Principal | None = None
    ) -> None:
        self.service = service
        self.principal = principal
        self.acting = acting

    async def create(
        self, message: str | UserMessage | None = None, *, key: str | None = None
    ) -> Accepted:
        return await self.service.create(
            message, key=key, principal=self.principal, sender=self.acting
        )

    async def conversation(self, conversation_id: str, *, key: str) -> str:
        """The session a protocol's conversation id (a chat, a thread) stands for: the
        session it names when it is the id of one this principal may see, else the one the
        conversation's first request opened under ``key`` (opened now, the first time). The
        store's idempotency record is the mapping: a channel keeps none of its own."""
        if conversation_id.startswith(SESSION_ID_PREFIX):
            try:
                return (await self.summary(conversation_id)).session_id
            except SessionNotFound:
                pass
        return (await self.create(None, key=key)).session_id

    async def send(
        self, session_id: str, message: str | UserMessage, *, key: str | None = None
    ) -> Accepted:
        return await self.service.send(
            session_id, message, key=key, principal=self.principal, sender=self.acting
        )

    async def respond(
        self, session_id: str, responses: list[InputResponse], *, key: str | None = None
    ) -> Accepted:
        return await self.service.respond(
            session_id, responses, key=key, principal=self.principal, responder=self.acting
        )

    async def cancel(self, session_id: str) -> bool:
        return await self.service.cancel(session_id, principal=self.principal)

    async def get(self, session_id: str) -> SessionRow:
        """The session's record: whether it is active, and how many turns it has accepted
        (``next_turn``), queued ones included."""
        return await self.service.get(session_id, principal=self.principal)

    async def running_turn(self, session_id: str) -> str | None:
        """The id of the session's turn the engine runs now (``turn_N``), if any: ahead of
        the log, whose writer flushes in batches, so a turn that just started may not have
        said so there yet. The oldest active one: eve starts a session's turns in order, so
        it runs or is the next to; a turn resumed after a restart waits ``ENQUEUED`` on DBOS's
        own queue for a moment, and is the session's running turn all the same."""
        await self.get(session_id)
        for workflow_id, _status in await self.service.engine.active_turns(session_id):
            if (turn_id := turn_id_of(workflow_id)) is not None:
                return turn_id
        return None

    async def summary(self, session_id: str) -> SessionSummary:
        return await self.service.summary(session_id, principal=self.principal)

    async def state(self, session_id: str) -> dict[str, Any]:
        """The session's ``define_state`` values as of its last finished step, by their
        names (other context keys, and eve's own ``eve.*`` slots, left out)."""
        await self.service.get(session_id, principal=self.principal)
        raw = await asyncio.to_thread(self.service.store.load_checkpoint, session_id)
        slots = {
            key.removeprefix(STATE_PREFIX): value
            for key, value in decode_checkpoint(raw).state.items()
            if key.startswith(STATE_PREFIX)
        }
        return {name: value for name, value in slots.items() if not name.startswith("eve.")}

    async def log_end(self, session_id: str) -> int:
        """The index the session's next event gets: a turn accepted after this call starts
        at or after it (the log only grows)."""
        await self.get(session_id)
        return await self._run(lambda c: log_end(c, session_id))

    async def turn_start(self, session_id: str, turn_id: str) -> int:
        """Where ``turn_id``'s events begin in the log: its first event's index, or, while
        it has none written, where the log ends (they come after it). A turn is read from
        here, not from index 0, so reading one costs the turn, not the session's history."""
        await self.get(session_id)
        number = turn_id.removeprefix("turn_")
        workflow = turn_workflow_id(session_id, int(number)) if number.isdigit() else turn_id

        def read(c: Connection) -> int:
            # the end first: a turn with no event yet writes its first one after it
            end = log_end(c, session_id)
            first = first_index(c, session_id, [workflow])
            return end if first is None else first

        return await self._run(read)

    async def open_requests(self, session_id: str) -> tuple[int, list[OpenRequest], int | None]:
        """The log's end, the requests the engine waits on (their rows: a flush ahead of the
        log), and the first log index of the workflows that asked them (None: none yet)."""
        await self.get(session_id)

        def read(c: Connection) -> tuple[int, list[OpenRequest], int | None]:
            end = log_end(c, session_id)
            waiting = open_requests(c, session_id)
            workflows = sorted({request.workflow_id for request in waiting})
            return end, waiting, first_index(c, session_id, workflows)

        return await self._run(read)

    async def latest_turn(self, session_id: str) -> str | None:
        """The session's latest turn that started (wrote to the log), if any."""
        await self.get(session_id)
        workflow = await self._run(lambda c: latest_turn_workflow(c, session_id))
        return None if workflow is None else turn_id_of(workflow)

    async def asking_turn(self, session_id: str, request_ids: list[str]) -> str | None:
        """The turn that asked ``request_ids`` (answered yet or not), as the engine recorded
        the asking; None when none of them was asked in the session."""
        await self.get(session_id)
        workflows = await self._run(lambda c: askers(c, session_id, request_ids))
        turns = [turn for workflow in workflows if (turn := turn_id_of(workflow)) is not None]
        return turns[0] if turns else None

    async def _run(self, work: Callable[[Connection], T]) -> T:
        return await asyncio.to_thread(self.service.store.run, work)

    async def events(self, session_id: str, start: int = 0, *, follow: bool) -> AsyncIterator[str]:
        """The session's log from ``start``: each item one encoded event
        (``eve.events.decode_event``), or ``""`` as a keep-alive while following."""
        return await self.service.events(session_id, start, follow=follow, principal=self.principal)
