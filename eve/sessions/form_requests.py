"""An MCP server's forms in a durable session: asked and answered inside the running step.

A server asks (elicitation, or a sampling request a person must allow) while it holds a
tool call open, so the turn cannot park between steps as an approval does: the call is
inside the recorded step that runs it, where DBOS lets no workflow message be read. So the
request is opened in the store like any other (``input.requested`` with ``kind: "form"``,
answered through the same session API), the answer is written to the request's row
(``give_answer``, from ``SessionService.respond``), and the step waits for it there: woken
at once when the answer comes through this process, else by a short poll (an answer that
another worker of a shared database took). The values leave the row when the call takes
them; the log keeps only the option.

Across a restart the call cannot be resumed: the server's request belonged to the
connection that died with the process. The step runs again, and its call finds that its
first run sent it (``mcp_calls``): it is not sent again (at most once), the form left open
is closed as cancelled (``close_open_forms``), and the model reads ``MCPCallInterrupted``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from eve._cancellation import CancelSignal
from eve.auth.principal import PrincipalRef
from eve.events import (
    FormRequest,
    InputRequestedData,
    InputResolvedData,
    Option,
    TurnWaitingData,
)
from eve.runtime.server_asks import FORM_ACTIONS, FormAction, FormAnswer, FormAsk
from eve.sessions.input_requests import InputDesk, request_id_for
from eve.sessions.store import SessionStore
from eve.sessions.tables import input_requests

FORM_OPTIONS = [Option(id=action, label=action.capitalize()) for action in FORM_ACTIONS]
#: how often a waiting form looks for an answer another process wrote
POLL_SECONDS = 0.5

#: forms waiting in this process, by request id: ``wake`` sets them as an answer comes
_waiting: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Event]] = {}


def give_answer(
    store: SessionStore, request_id: str, option: str, values: Any, responder: dict[str, str]
) -> bool:
    """Write a form's answer where its waiting call looks (a thread: the store blocks);
    False when it already has one (the first answer counts, as a workflow's message would)."""
    answer = json.dumps({"option": option, "values": values, "responder": responder})
    written = store.run(
        lambda c: c.execute(
            input_requests.update()
            .where(input_requests.c.request_id == request_id, input_requests.c.answer.is_(None))
            .values(answer=answer)
        )
    )
    return bool(written.rowcount)


def wake(request_id: str) -> None:
    """Wake the call waiting on ``request_id`` in this process, if one does."""
    found = _waiting.get(request_id)
    if found is not None:
        loop, event = found
        loop.call_soon_threadsafe(event.set)


@contextlib.contextmanager
def _registered(request_id: str) -> Iterator[asyncio.Event]:
    event = asyncio.Event()
    _waiting[request_id] = (asyncio.get_running_loop(), event)
    try:
        yield event
    finally:
        _waiting.pop(request_id, None)


def _open(c: Connection, request_id: str, schema: dict[str, Any]) -> None:
    c.execute(
        input_requests.update()
        .where(input_requests.c.request_id == request_id)
        .values(form=json.dumps(schema))
    )


def _taken(c: Connection, request_id: str) -> str | None:
    """The answer, if given, and the request closed with its values dropped."""
    row = c.execute(
        sa.select(input_requests.c.answer).where(input_requests.c.request_id == request_id)
    ).first()
    if row is None or row.answer is None:
        return None
    given = json.loads(row.answer)
    kept = json.dumps({"option": given["option"], "responder": given.get("responder")})
    c.execute(
        input_requests.update()
        .where(input_requests.c.request_id == request_id)
        .values(status="resolved", answer=kept)
    )
    return str(row.answer)


@dataclass(kw_only=True)
class DurableForms:
    """A turn's (or task's) ``Forms``: asked through its desk, waited for in the step."""

    desk: InputDesk
    signal: CancelSignal
    #: forms asked so far per call, for their request ids (distinct per form, and the
    #: same in a run again after a restart)
    asked: Counter[str] = field(default_factory=Counter)

    def _request_id(self, call_id: str, number: int) -> str:
        return request_id_for(self.desk.workflow_id, f"{call_id}:form-{number}")

    async def ask(self, form: FormAsk) -> FormAnswer:
        self.asked[form.call_id] += 1
        request_id = self._request_id(form.call_id, self.asked[form.call_id])
        desk, store = self.desk, self.desk.store
        await asyncio.to_thread(
            store.add_input_request,
            request_id,
            desk.session_id,
            desk.workflow_id,
            list(FORM_ACTIONS),
            asker=desk.principal,
        )
        await asyncio.to_thread(store.run, lambda c: _open(c, request_id, form.schema))
        request = FormRequest(
            request_id=request_id,
            tool_name=form.tool_name,
            call_id=form.call_id,
            options=FORM_OPTIONS,
            connection=form.connection,
            message=form.message,
            schema=form.schema,
            purpose=form.purpose,
        )
        await desk.emitter.emit(InputRequestedData(turn_id=desk.turn_id, requests=[request]))
        await desk.emitter.emit(TurnWaitingData(turn_id=desk.turn_id, on="input"))
        await desk.events.writer.flush()  # a person sees it now, not at the step's end
        with _registered(request_id) as answered:
            given = await self._answer(request_id, answered)
        option: FormAction = "cancel" if given is None else given["option"]
        who = None if given is None else given.get("responder")
        await desk.emitter.emit(
            InputResolvedData(
                turn_id=desk.turn_id,
                request_id=request_id,
                option_id="cancelled" if given is None else option,
                responder=None if who is None else PrincipalRef(id=who["id"], kind=who["kind"]),
            )
        )
        values = None if given is None else given.get("values")
        return FormAnswer(action=option, values=values if option == "accept" else None)

    async def _answer(self, request_id: str, answered: asyncio.Event) -> dict[str, Any] | None:
        """The answer as written; None when the turn was cancelled first (the request is
        closed then)."""
        store = self.desk.store
        while True:
            found = await asyncio.to_thread(store.run, lambda c: _taken(c, request_id))
            if found is not None:
                given: dict[str, Any] = json.loads(found)
                return given
            if self.signal.cancelled:
                await asyncio.to_thread(store.resolve_input_request, request_id)
                return None
            waits = [
                asyncio.ensure_future(answered.wait()),
                asyncio.ensure_future(self.signal.wait()),
            ]
            await asyncio.wait(waits, timeout=POLL_SECONDS, return_when=asyncio.FIRST_COMPLETED)
            for waiting in waits:
                waiting.cancel()
            answered.clear()


async def close_open_forms(desk: InputDesk) -> None:
    """Close, as cancelled, the forms an earlier run of ``desk``'s workflow left open: their
    server's requests died with that run's connection."""
    open_ids = await asyncio.to_thread(desk.store.run, lambda c: _open_forms(c, desk.workflow_id))
    for request_id in open_ids:
        await asyncio.to_thread(desk.store.resolve_input_request, request_id)
        await desk.emitter.emit(
            InputResolvedData(turn_id=desk.turn_id, request_id=request_id, option_id="cancelled")
        )


def _open_forms(c: Connection, workflow_id: str) -> list[str]:
    rows = c.execute(
        sa.select(input_requests.c.request_id).where(
            input_requests.c.workflow_id == workflow_id,
            input_requests.c.status == "pending",
            input_requests.c.form.is_not(None),
        )
    )
    return [row.request_id for row in rows]
