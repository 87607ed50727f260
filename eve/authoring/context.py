"""What a tool's execute receives besides its input."""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from eve.auth.principal import OPERATOR, Principal
from eve.cancellation import CancelSignal


@dataclass(frozen=True, kw_only=True)
class ToolContext:
    """The call a tool is serving.

    Attributes:
        session_id: the session the call belongs to.
        call_id: the model's id for this tool call.
        tool_name: the tool's name; for a call made through ``eve__tool``, the catalog tool
            it named.
        node_id: the agent node whose tool this is.
        signal: set when the turn is cancelled; long tools should check it.
        workspace: the directory file tools are confined to (``workspace`` in agent.py,
            relative to the app root; the app root itself by default).
        principal: who sent the message this turn answers (``eve.auth.Principal``: id,
            kind, claims); the operator in ``eve run`` and ``eve dev``.
        turn_id: the turn the call belongs to (``turn_3``): with ``session_id`` and
            ``call_id`` it names the call across a crash and the step's rerun.
    """

    session_id: str
    call_id: str
    tool_name: str
    node_id: str = "__root__"
    signal: CancelSignal = field(default_factory=CancelSignal)
    workspace: Path = field(default_factory=Path.cwd)
    principal: Principal = OPERATOR
    turn_id: str = "turn_0"


@dataclass(frozen=True, kw_only=True)
class StepAttempt:
    """A durable step part starting to run fresh (not replayed from its record).

    ``step`` names the part across a crash and its rerun (the turn's workflow and the part's
    record key): an attempt that died before its record was written leaves effects tagged
    with it, and the next fresh attempt of the same part undoes them first.
    """

    step: str
    session_id: str
    principal: Principal = OPERATOR


class FreshStepListener(Protocol):
    async def fresh_step(self, attempt: StepAttempt) -> None:
        """Undo what an unrecorded earlier attempt of ``attempt.step`` left behind."""
        ...


#: the step part running fresh now (None: in process, or a replay): what a write tags
running_step: ContextVar[StepAttempt | None] = ContextVar("eve_running_step", default=None)
# weak: a listener (a memory host) goes with the service that made it
_listeners: weakref.WeakSet[FreshStepListener] = weakref.WeakSet()


def listen_for_fresh_steps(listener: FreshStepListener) -> None:
    _listeners.add(listener)


def stop_listening_for_fresh_steps(listener: FreshStepListener) -> None:
    _listeners.discard(listener)


@asynccontextmanager
async def fresh_step(attempt: StepAttempt) -> AsyncIterator[None]:
    """Run a step part's fresh attempt: listeners undo an earlier unrecorded attempt's
    effects first, then the part runs with ``running_step`` naming it. The durable recorder
    calls this, so eve.sessions need not know what the listeners (memory) keep."""
    for listener in list(_listeners):
        await listener.fresh_step(attempt)
    token = running_step.set(attempt)
    try:
        yield
    finally:
        running_step.reset(token)
