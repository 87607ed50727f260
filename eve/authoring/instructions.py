"""Dynamic instructions: ``agent/instructions.py``, a function of the turn returning the part
of the system prompt that changes (``define_instructions``).

``instructions.md`` stays the static part; what the function returns is appended after it,
evaluated once per turn and recorded with the turn, so a replayed turn sends the prompt its
first run sent.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic

from eve.authoring._caller import caller_module
from eve.authoring.context import NO_DEPS, DepsT
from eve.authoring.deps import TurnInfo, takes_one_argument
from eve.errors import AuthoringError


@dataclass(frozen=True, kw_only=True)
class InstructionsContext(TurnInfo, Generic[DepsT]):
    """What a dynamic-instructions function is given: the turn (``TurnInfo``: session,
    turn, node, principal, workspace), its message and its deps.

    ``InstructionsContext[Db]`` types ``ctx.deps`` as ``Db``.
    """

    #: the text of the user message the turn answers
    message: str = ""
    #: what ``define_agent(deps=factory)`` built for this turn (None without a factory)
    deps: DepsT = NO_DEPS


#: ``render(ctx)``: the dynamic part of the system prompt, or an awaitable of it
Render = Callable[[InstructionsContext[Any]], "str | Awaitable[str]"]


@dataclass(frozen=True, kw_only=True)
class InstructionsDefinition:
    """A validated ``define_instructions`` call: the function eve calls at each turn."""

    render: Render
    #: the module whose code made this definition (see the export rule)
    defined_in: str | None = None

    def __call__(self, ctx: InstructionsContext[Any]) -> str | Awaitable[str]:
        """Call the function directly (a test of the prompt it writes)."""
        return self.render(ctx)


def define_instructions(render: Render) -> InstructionsDefinition:
    """Define the dynamic part of a node's system prompt; use it as a decorator in
    ``agent/instructions.py`` (``@define_instructions`` over ``def instructions(ctx): ...``).

    ``render`` takes an ``InstructionsContext`` and returns a string (sync or async). Raises
    ``AuthoringError`` for anything else: a generator, or a function of more arguments.
    """
    if not callable(render) or isinstance(render, InstructionsDefinition):
        raise AuthoringError(
            "define_instructions takes a function of the turn's InstructionsContext returning "
            f"the prompt (def instructions(ctx) -> str), not {type(render).__name__}"
        )
    if inspect.isgeneratorfunction(render) or inspect.isasyncgenfunction(render):
        raise AuthoringError(
            f"define_instructions: {_name(render)} is a generator; return the prompt as one "
            "string instead (sync or async)"
        )
    if takes_one_argument(render) is not True:
        raise AuthoringError(
            f"define_instructions: {_name(render)} must take exactly one argument, the turn's "
            "InstructionsContext (def instructions(ctx: InstructionsContext) -> str)"
        )
    return InstructionsDefinition(render=render, defined_in=caller_module())


def _name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__
