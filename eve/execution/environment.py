"""``TurnEnvironment``: where and for whom a turn runs, as one value ``run_agent`` takes."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path

from eve._cancellation import CancelSignal
from eve.context.active import EveContext
from eve.costs import Spend
from eve.execution.events import EventEmitter, EventSink, HookDispatcher
from eve.execution.limits import LimitHook
from eve.execution.recording import Inline, StepRecorder
from eve.execution.tasks import NoTasks, TaskRunner
from eve.execution.tool_calls import ApprovalHook
from eve.runtime.server_asks import Forms, SentCalls


@dataclass(frozen=True, kw_only=True)
class TurnEnvironment:
    """The ids, signal, events, state, durability, tasks and approvals of one turn.

    Every field has the default a plain in-process turn wants, so a caller names only what
    it provides: ``TurnEnvironment(on_event=print, approve=ask)``. Events go to ``emitter``
    when given (a durable session's, a subagent's linked one), else to a new emitter that
    hands them to ``on_event`` and then to the setup's hooks.
    """

    session_id: str = "local"
    turn_id: str = "turn_0"
    signal: CancelSignal = field(default_factory=CancelSignal)
    on_event: EventSink | None = None
    emitter: EventEmitter | None = None
    #: where ``define_state`` lives; a fresh context for ``session_id`` when None
    context: EveContext | None = None
    #: the durability seam (``execution.recording``)
    recorder: StepRecorder = field(default_factory=Inline)
    #: runs subagent and workflow-tool calls (``execution.tasks``); by default none run
    tasks: TaskRunner = field(default_factory=NoTasks)
    #: asked about calls whose rule needs a person; None: such calls are denied
    approve: ApprovalHook | None = None
    #: tools approved under ``once()`` in this session before the turn (the turn's are in
    #: ``RunResult.state.approved_once``)
    approved_once: AbstractSet[str] = frozenset()
    #: a JSONL transcript each message is appended to as it is recorded
    transcript: Path | None = None
    #: the session's tokens and cost before this turn (``turn.completed`` adds the turn's)
    spent_before: Spend = field(default_factory=Spend)
    #: asked when the session crosses a limit (``execution.limits``); None: no one can
    #: raise it, and crossing one is ``SessionLimitReached``
    ask_limit: LimitHook | None = None
    #: how many times each limit was raised in this session before the turn (after it:
    #: ``RunResult.state.raised_limits``)
    raised_limits: Mapping[str, int] = field(default_factory=dict)
    #: where an MCP server's forms (elicitation, a sampling request to allow) are answered
    #: (``execution.call_asks``); None: no one sees them, and each is cancelled
    forms: Forms | None = None
    #: what a durable turn records of its MCP calls, so a run again after a restart sends
    #: none twice (``runtime.server_asks.SentCalls``); None: nothing is recorded
    sent_calls: SentCalls | None = None

    def __post_init__(self) -> None:
        if self.on_event is not None and self.emitter is not None:
            raise TypeError(
                "TurnEnvironment takes on_event or emitter, not both: an emitter has its sink"
            )

    def events(self, hooks: HookDispatcher | None) -> EventEmitter:
        """The emitter the turn publishes through (``hooks``: the setup's)."""
        if self.emitter is not None:
            return self.emitter
        return EventEmitter(self.on_event, session_id=self.session_id, hooks=hooks)
