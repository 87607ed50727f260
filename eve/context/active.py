"""The active eve context: per-session values, reachable from tools through a contextvar."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from eve.auth.principal import OPERATOR, Principal
from eve.context._registry import current_context_var, registered_keys
from eve.errors import NoActiveContext

log = logging.getLogger("eve.context")


@dataclass(kw_only=True)
class EveContext:
    """The values of one session; ``values`` is keyed by ContextKey name."""

    session_id: str
    values: dict[str, Any] = field(default_factory=dict)
    #: who sent the message the turn answers (a subagent's turn: its caller's); the
    #: operator where no server verified anyone (``eve run``, ``eve dev``)
    principal: Principal = OPERATOR
    #: what the node's deps factory built for the running turn (``define_agent(deps=...)``),
    #: None between turns or without a factory; never in a snapshot (it cannot be stored)
    deps: Any = None

    def snapshot(self) -> dict[str, Any]:
        """Encoded values of every codec-bearing key: what a checkpoint stores."""
        keys = registered_keys()
        out: dict[str, Any] = {}
        for name, value in sorted(self.values.items()):
            key = keys.get(name)
            if key is not None and key.codec is not None:
                out[name] = key.codec.encode(value)
        return out

    def restore(self, snapshot: dict[str, Any]) -> None:
        """Load a checkpoint; keys this code no longer defines are dropped with a warning."""
        keys = registered_keys()
        for name, data in snapshot.items():
            key = keys.get(name)
            if key is None or key.codec is None:
                log.warning("dropping unknown context key %r from the checkpoint", name)
                continue
            self.values[name] = key.codec.decode(data)


def active_context() -> EveContext | None:
    context: EveContext | None = current_context_var().get()
    return context


def require_context(what: str) -> EveContext:
    context = active_context()
    if context is None:
        raise NoActiveContext(
            f"No active eve context: {what} can only be used while eve runs a session "
            "(inside a tool, hook or the agent loop), not at import time or in a plain script."
        )
    return context


def current_principal() -> Principal:
    """Who sent the message the running turn answers: for a hook or any code a tool calls
    (a tool has it as ``ctx.principal`` too). Raises ``NoActiveContext`` outside a turn."""
    return require_context("current_principal()").principal


@contextlib.contextmanager
def use_context(context: EveContext) -> Iterator[EveContext]:
    """Make ``context`` active for the enclosed block (and tasks started inside it)."""
    token = current_context_var().set(context)
    try:
        yield context
    finally:
        current_context_var().reset(token)
