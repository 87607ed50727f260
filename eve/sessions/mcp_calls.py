"""What a durable turn records of its MCP tool calls: each is sent at most once, across
restarts too, and one that runs as a task is read again rather than sent again.

A call runs inside the recorded step of its part; when the process stops before the step
is recorded, the turn runs the step again after the restart. Without a record the call
would be sent a second time, though the server may have run it. So before a call is sent
its turn writes it here (and the server's task id, once it has one): the run again finds
it, and then either reads the task's result (the server still holds it: an HTTP server
that outlived eve) or fails the call with ``MCPCallInterrupted`` instead of sending it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from eve.runtime.server_asks import SentCall
from eve.sessions.form_requests import close_open_forms
from eve.sessions.input_requests import InputDesk, request_id_for
from eve.sessions.tables import mcp_calls


@dataclass(frozen=True, kw_only=True)
class DurableSentCalls:
    """A turn's (or task's) ``SentCalls``, kept in the session store."""

    desk: InputDesk

    def _key(self, call_id: str) -> str:
        return request_id_for(self.desk.workflow_id, f"mcp:{call_id}")

    async def sent(self, call_id: str) -> SentCall | None:
        key = self._key(call_id)
        found = await asyncio.to_thread(self.desk.store.run, lambda c: _sent(c, key))
        if found is not None:
            # the run that sent it stopped: any form it left open cannot be answered now
            await close_open_forms(self.desk)
        return found

    async def record(self, call_id: str, *, task_id: str | None = None) -> None:
        key, workflow_id = self._key(call_id), self.desk.workflow_id
        await asyncio.to_thread(
            self.desk.store.run, lambda c: _record(c, key, workflow_id, task_id)
        )


def _sent(c: Connection, key: str) -> SentCall | None:
    row = c.execute(sa.select(mcp_calls.c.task_id).where(mcp_calls.c.call_key == key)).first()
    return None if row is None else SentCall(task_id=row.task_id)


def _record(c: Connection, key: str, workflow_id: str, task_id: str | None) -> None:
    done = c.execute(mcp_calls.update().where(mcp_calls.c.call_key == key).values(task_id=task_id))
    if done.rowcount == 0:
        c.execute(mcp_calls.insert().values(call_key=key, workflow_id=workflow_id, task_id=task_id))
