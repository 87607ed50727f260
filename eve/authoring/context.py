"""What a tool's execute receives besides its input."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic

from typing_extensions import TypeVar

from eve._cancellation import CancelSignal
from eve.auth.principal import OPERATOR, Principal

#: the type of ``ctx.deps`` (``define_agent(deps=...)``'s factory's result); a bare
#: ``ToolContext`` is ``ToolContext[Any]``, so tools that take no deps need not name one
DepsT = TypeVar("DepsT", default=Any)
#: ``ctx.deps`` of an agent without a deps factory (typed Any, so it is any ``DepsT``)
NO_DEPS: Any = None
if TYPE_CHECKING:
    from eve.sandbox.provider import Sandbox


@dataclass(frozen=True, kw_only=True)
class ToolContext(Generic[DepsT]):
    """The call a tool is serving. ``ToolContext[Db]`` types ``ctx.deps`` as ``Db``.

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
        deps: what the agent's ``define_agent(deps=factory)`` built for this turn (None
            without a factory); rebuilt each turn, never stored.
        sandbox: where commands run (``await ctx.sandbox.run(["ls", "-l"])``): the
            session's workspace under the node's ``sandbox.py``; see docs/sandbox.md.
    """

    session_id: str
    call_id: str
    tool_name: str
    node_id: str = "__root__"
    signal: CancelSignal = field(default_factory=CancelSignal)
    workspace: Path = field(default_factory=Path.cwd)
    principal: Principal = OPERATOR
    turn_id: str = "turn_0"
    # None when the agent declares no factory: typed as DepsT so ``ToolContext[Db]`` reads
    # ``ctx.deps`` as ``Db`` (eve cannot check the annotation against the factory)
    deps: DepsT = NO_DEPS

    @property
    def sandbox(self) -> Sandbox:
        # imported here: the sandbox is runtime machinery, and authoring stays light
        from eve.sandbox.bindings import sandbox_for

        return sandbox_for(self)
