"""Dependencies: what ``define_agent(deps=factory)`` builds for each turn, and what it is given.

A factory is a function of one ``TurnInfo`` (or of nothing) returning the object tools,
hooks and dynamic instructions reach as ``ctx.deps``: sync or async, or a generator (sync
or async) that yields it and cleans up after its ``yield`` when the turn ends. It runs at
the start of every turn, and again when a turn is resumed after a crash or runs on another
worker, because the object is never serialized: a database handle or an HTTP client cannot
be.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eve.auth.principal import OPERATOR, Principal
from eve.errors import AuthoringError

#: ``factory(info)`` or ``factory()``: the deps object, an awaitable of it, or a generator
#: (sync or async) yielding it once
DepsFactory = Callable[..., Any]


@dataclass(frozen=True, kw_only=True)
class TurnInfo:
    """Who and where a turn runs: what a deps factory is given.

    Attributes:
        session_id: the session the turn belongs to (a subagent's: its child session).
        turn_id: the turn (``turn_3``).
        node_id: the agent node running it (``__root__``, ``researcher``).
        principal: who sent the message the turn answers (a subagent's: its caller's).
        workspace: the directory the node's file tools are confined to.
    """

    session_id: str
    turn_id: str = "turn_0"
    node_id: str = "__root__"
    principal: Principal = OPERATOR
    workspace: Path = field(default_factory=Path.cwd)


def takes_one_argument(fn: Callable[..., Any]) -> bool | None:
    """Whether ``fn`` is called with one positional argument (True) or none (False); None
    when it can be called with neither (so it is no factory of ours)."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return True  # a builtin without a signature: trust it takes the argument
    for arguments in ((object(),), ()):
        try:
            signature.bind(*arguments)
        except TypeError:
            continue
        return bool(arguments)
    return None


def check_deps_factory(value: object) -> DepsFactory:
    """``value`` if it can be a deps factory; ``AuthoringError`` saying why not otherwise."""
    if not callable(value):
        raise AuthoringError(
            f"define_agent(deps=...) takes a factory, a function of the turn "
            f"(def make_deps(info: TurnInfo) -> Deps), not {type(value).__name__}: eve calls "
            "it at the start of each turn, since the object itself is never stored"
        )
    if takes_one_argument(value) is None:
        raise AuthoringError(
            "define_agent(deps=...): the factory must take one argument, the turn's TurnInfo "
            "(session_id, turn_id, node_id, principal, workspace), or none"
        )
    return value
