"""``/eve/v1/memory``: what the agent remembers, for a person to inspect and erase.

Owner-checked like sessions: an operator sees and erases every entry; anyone else only the
entries they saved or that are about them (their ``principal`` scope), so a person can
read and delete what the agent remembers of them, and another's entry is not found.

- ``GET /eve/v1/memory?slot=&query=&limit=``: entries, newest first or best match first;
- ``DELETE /eve/v1/memory/{memory_id}``: forget one (404 when not theirs to see);
- ``DELETE /eve/v1/memory?slot=``: forget everything about the caller (an operator must
  name the slot, so one request cannot wipe every person's memory by accident).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from eve.errors import InvalidListQuery, MemoryNotFound
from eve.execution.setup import AgentSetup
from eve.memory.access import MemoryAdmin, MemoryHost
from eve.server.answers import answer
from eve.server.auth import principal_of
from eve.sessions.listing import parse_limit
from eve.wire.answers import Erased, Forgotten, Memories

Handler = Callable[[Request], Awaitable[Response]]


def memory_admin(setup: AgentSetup) -> MemoryAdmin | None:
    """Every slot of the agent behind ``setup``, on the store its turns write; None when it
    has no slots (the routes then answer with no entries)."""
    nodes = [setup, *setup.subagents.values()]
    entries = [entry for node in nodes for entry in node.agent.memory]
    host: MemoryHost | None = next((n.memory.host for n in nodes if n.memory), None)
    return MemoryAdmin(host, entries) if host is not None and entries else None


def memory_routes(setup: AgentSetup) -> tuple[Handler, Handler, Handler]:
    """The list, forget-one and erase handlers over ``setup``'s memory."""
    admin = memory_admin(setup)

    async def listed(request: Request) -> Response:
        params = request.query_params
        limit = parse_limit(params.get("limit"))
        if admin is None:
            return answer(Memories(memories=[]))
        found = await asyncio.to_thread(
            admin.inspect,
            principal_of(request),
            slot=params.get("slot") or None,
            query=params.get("query") or None,
            limit=limit,
        )
        return answer(Memories(memories=msgspec.to_builtins(found)))

    async def forget_one(request: Request) -> Response:
        memory_id = request.path_params["memory_id"]
        erased = 0
        if admin is not None:
            erased = await asyncio.to_thread(
                admin.erase, principal_of(request), slot=None, ids=[memory_id]
            )
        if erased == 0:
            raise MemoryNotFound(f"no memory {memory_id}", slot="", memory_id=memory_id)
        return answer(Forgotten(forgotten=[memory_id]))

    async def erase(request: Request) -> Response:
        principal = principal_of(request)
        slot = request.query_params.get("slot") or None
        if principal.is_operator and slot is None:
            raise InvalidListQuery(
                "an operator erases one slot at a time: DELETE /eve/v1/memory?slot=<name> "
                "(a person without ?slot= erases everything about themselves)"
            )
        erased = 0
        if admin is not None:
            erased = await asyncio.to_thread(admin.erase, principal, slot=slot, ids=None)
        return answer(Erased(erased=erased))

    return listed, forget_one, erase
