"""What a workflow tool's body receives: a ``ToolContext`` that can also wait.

A workflow tool's body (``define_workflow_tool(run=...)``) runs as a task: in a durable
session, its own child workflow. Its waits are durable there: ``sleep`` and
``wait_for_event`` hold no compute and survive a restart, ``ask`` parks until a person
answers over the session API, and ``step`` records a side effect's result so that a
recovered body does not repeat it. Run outside a durable session (``eve run``, a bare
``run_agent``) the same body runs in process: sleeps are real sleeps, ``ask`` asks whoever
the runner can ask, and waiting for an event needs a durable session.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from eve.authoring.context import ToolContext

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class Question:
    """What a workflow tool asks a person: the question and the answers it accepts."""

    tool_name: str
    call_id: str
    question: str
    options: list[str]


AskHook = Callable[[Question], Awaitable[str | None]]


class Waits(Protocol):
    """How a runner carries out a body's waits (in process, or durably)."""

    async def sleep(self, seconds: float) -> None: ...

    async def wait_for_event(self, name: str, timeout: float | None) -> Any: ...

    async def ask(self, question: Question) -> str: ...

    async def progress(self, value: Any) -> None: ...

    async def step(self, name: str, fn: Callable[[], Awaitable[T]]) -> T: ...


@dataclass(frozen=True, kw_only=True)
class WorkflowContext(ToolContext):
    """A ``ToolContext`` with durable waits, for ``define_workflow_tool`` bodies."""

    waits: Waits

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds``; in a durable session no process holds the wait."""
        await self.waits.sleep(float(seconds))

    async def wait_for_event(self, name: str, *, timeout: float | None = None) -> Any:
        """The data of the next event ``name`` sent to this task (``POST
        /sessions/{id}/tasks/{task_id}/events``), or ``None`` after ``timeout`` seconds."""
        return await self.waits.wait_for_event(name, timeout)

    async def ask(self, question: str, options: Sequence[str] = ("yes", "no")) -> str:
        """Ask a person; returns the option they chose."""
        choices = [str(option) for option in options]
        if not choices or len(set(choices)) != len(choices):
            raise ValueError("ask() needs at least one option, each different")
        return await self.waits.ask(
            Question(
                tool_name=self.tool_name, call_id=self.call_id, question=question, options=choices
            )
        )

    async def progress(self, value: Any) -> None:
        """Publish partial progress as ``action.partial``."""
        await self.waits.progress(value)

    async def step(self, name: str, fn: Callable[[], Awaitable[T]]) -> T:
        """Run ``fn`` once: a recovered body gets the recorded result instead of running it
        again. Use it for side effects (a charge, an email). The result must be JSON-ready."""
        return await self.waits.step(name, fn)
