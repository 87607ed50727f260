"""``Conversation``: one session's turns in this process, as ``eve eval`` and ``eve.testing``
run them: the loop, tasks and hooks of ``eve run``, answers from a script, no database.

Each message is a turn of ``run_agent`` on the history so far, with the session's state
(``define_state``), ``once()`` approvals and spend carried from turn to turn.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from eve._cancellation import CancelSignal
from eve.context.active import EveContext
from eve.costs import Spend
from eve.evals.case_setup import CaseAnswers
from eve.events import SessionEvent
from eve.execution.environment import TurnEnvironment
from eve.execution.inline_tasks import InlineTasks
from eve.execution.loop import run_agent
from eve.execution.result import RunResult
from eve.execution.setup import AgentSetup
from eve.messages import Message, UserMessage


@dataclass(kw_only=True)
class Conversation:
    """A session of ``setup`` whose person is ``answers``; every event and result kept."""

    setup: AgentSetup
    answers: CaseAnswers
    #: the session id's prefix: ``eval`` for a case, ``test`` for ``eve.testing``
    kind: str = "eval"
    signal: CancelSignal = field(default_factory=CancelSignal)
    events: list[SessionEvent] = field(default_factory=list)
    results: list[RunResult] = field(default_factory=list)
    #: the history after the last finished turn
    history: list[Message] = field(default_factory=list)
    session_id: str = field(init=False)
    _context: EveContext = field(init=False)
    _tasks: InlineTasks = field(init=False)
    _approved_once: frozenset[str] = field(init=False, default=frozenset())
    _spent: Spend = field(init=False, default_factory=Spend)

    def __post_init__(self) -> None:
        self.session_id = f"{self.kind}_{uuid.uuid4().hex[:12]}"
        self._context = EveContext(session_id=self.session_id)
        answers = self.answers
        self._tasks = InlineTasks(setup=self.setup, approve=answers.approve, ask=answers.ask)

    async def send(self, message: str | UserMessage) -> RunResult:
        """Run one turn on ``message``; its events are appended to ``events``."""
        env = TurnEnvironment(
            session_id=self.session_id,
            turn_id=f"turn_{len(self.results)}",
            signal=self.signal,
            on_event=self.events.append,
            context=self._context,
            tasks=self._tasks,
            approve=self.answers.approve,
            approved_once=self._approved_once,
            spent_before=self._spent,
        )
        result = await run_agent(self.setup, message, history=self.history, env=env)
        self.results.append(result)
        self.history, self._spent = result.messages, result.session
        if result.state is not None:  # the session's once() approvals, as the turn left them
            self._approved_once = result.state.approved_once
        return result
