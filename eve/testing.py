"""A compiled agent for a test in one call: ``agent_for_test(".", model=..., tools={...})``.

::

    from eve.evals import Reply, ToolUse
    from eve.testing import agent_for_test

    script = [Reply(calls=[ToolUse("get_price", {"item": "hammer"})]), Reply("12.50 EUR")]
    with agent_for_test(".", model=script, tools={"get_price": lambda item: 12.5}) as agent:
        run = agent.run_sync("What does a hammer cost?")
        assert run.final_text == "12.50 EUR"

Why a copy: the agent is compiled in a temporary copy of ``agent/``, so a test never
writes the app's ``.eve/``, works on stale artifacts, and its tools' workspace and memory
database are its own. Its turns run in this process as ``eve eval`` runs a case (the
loop, subagents, workflow tools and hooks of ``eve run``; no database), on the model the
test names: ``offline/test`` unless it names another, so a test never reaches a provider
by accident.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, cast

from eve._agent_setup import build_setup
from eve._authored import AUTHORED_PACKAGE
from eve.artifacts import AGENT_DIR
from eve.compiler import compile_to_disk
from eve.errors import UnknownStub
from eve.evals.case_run import CaseRun
from eve.evals.case_setup import (
    CaseAnswers,
    model_client,
    script_model,
    stubbable,
    with_client,
    with_stubs,
)
from eve.evals.conversation import Conversation
from eve.evals.definition import Answer, InlineScript, Stub
from eve.execution.memory import with_memory
from eve.execution.setup import DEFAULT_WORKSPACE, PROTECTED_PATHS, AgentSetup
from eve.manifest import ROOT_NODE_ID, CompiledManifest
from eve.memory.access import MemoryHost
from eve.models.base import ModelClient
from eve.models.registry import OFFLINE_DEFAULT
from eve.runtime import load_compiled_agent
from eve.runtime.connections import close_pool

if TYPE_CHECKING:
    from eve.events import SessionEvent
    from eve.messages import UserMessage

__all__ = ["TestAgent", "agent_for_test"]

#: what ``model=`` takes: a model id, a client (``FunctionModel``, …), or an inline script
#: of ``Reply`` values (a list, or a mapping of node id → list, as an eval case's)
ModelChoice = str | ModelClient | InlineScript
#: the memory slots' database, in the copy (relative to its root)
MEMORY_DATABASE = ".eve/memory.sqlite"


class TestAgent:
    """A compiled agent with a test's model, stubs and answers; a conversation of its own.

    Each ``run`` is a turn on the history so far; ``override`` starts another conversation
    on the same compiled agent. Use it as a context manager (``with`` or ``async with``), or
    call ``close``: that ends the MCP servers its turns started and removes the temporary
    copy (an overriding agent's ``close`` leaves the copy to the agent that made it).
    """

    # not a test class, though pytest would collect it by its name
    __test__ = False

    def __init__(
        self,
        prepared: AgentSetup,
        *,
        copy: Path,
        model: ModelChoice,
        tools: Mapping[str, Stub],
        answers: Sequence[Answer],
        owns_copy: bool = True,
    ) -> None:
        #: the resolved agent its turns run: every node on the test's model, stubs in place
        self.setup = _overridden(prepared, model, tools, copy)
        #: the temporary app root the agent was compiled in (its workspace is under it)
        self.app_root = copy
        self._prepared, self._owns_copy = prepared, owns_copy
        self._model, self._tools, self._answers = model, dict(tools), tuple(answers)
        self._conversation = Conversation(
            setup=self.setup, answers=CaseAnswers(answers=self._answers), kind="test"
        )
        # sync turns share one event loop, so MCP connections live from turn to turn
        self._runner: asyncio.Runner | None = None

    @property
    def events(self) -> list[SessionEvent]:
        """Every event of the conversation so far, subagents' included."""
        return self._conversation.events

    @property
    def unanswered(self) -> list[str]:
        """Approvals and questions the test's ``answers`` had no answer for (denied)."""
        return self._conversation.answers.unanswered

    async def run(self, message: str | UserMessage) -> CaseRun:
        """One turn on ``message``: its events and result, read as an eval's checks read a
        run (``final_text``, ``calls()``, ``output``, ``usage``, …)."""
        before = len(self.events)
        result = await self._conversation.send(message)
        return CaseRun(
            events=tuple(self.events[before:]),
            results=(result,),
            unanswered=tuple(self.unanswered),
            model=self.setup.client.model_id,
        )

    def run_sync(self, message: str | UserMessage) -> CaseRun:
        """``run`` from synchronous code (a plain test function, a script)."""
        if self._runner is None:
            self._runner = asyncio.Runner()
        return self._runner.run(self.run(message))

    def override(
        self,
        *,
        model: ModelChoice | None = None,
        tools: Mapping[str, Stub] | None = None,
        answers: Sequence[Answer] | None = None,
    ) -> TestAgent:
        """A new conversation on this compiled agent, with another model, stubs or answers
        (what is not given stays this agent's), as pydantic-ai's ``agent.override``: nothing
        is compiled again. Use it before this agent is closed: the copy stays this agent's."""
        return TestAgent(
            self._prepared,
            copy=self.app_root,
            model=self._model if model is None else model,
            tools=self._tools if tools is None else tools,
            answers=self._answers if answers is None else answers,
            owns_copy=False,
        )

    def close(self) -> None:
        """End the MCP servers of sync turns, forget the copy's modules, remove the copy."""
        if self._runner is not None:
            self._runner.run(close_pool())
            self._runner.close()
            self._runner = None
        if self._owns_copy:
            _forget(self.app_root)

    async def aclose(self) -> None:
        """``close`` for a test whose turns ran in its own event loop."""
        await close_pool()
        self.close()

    def __enter__(self) -> TestAgent:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> TestAgent:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def agent_for_test(
    app_root: str | Path = ".",
    *,
    model: ModelChoice = "offline/test",
    tools: Mapping[str, Stub] | None = None,
    answers: Sequence[Answer] = (),
    max_turns: int | None = None,
) -> TestAgent:
    """The agent of ``app_root/agent`` compiled in a temporary copy, ready to run turns.

    Args:
        model: every node's model: a model id (``offline/test``, the default), a client
            (``FunctionModel(fn)``), or a script of ``Reply`` values.
        tools: function tools to stub, by name: each stub is called with the validated
            input as keyword arguments (sync or async) and returns what the model sees, in
            every node that has the tool. A name no function tool has is ``UnknownStub``.
        answers: the person: ``Approve("tool")``, ``Deny("tool")``, ``Choose("tool",
            option)``; an approval or question with no answer is denied and noted in
            ``unanswered``.
        max_turns: the root agent's limit, over agent.py's.

    Raises ``CompileFailed`` (with the diagnostics) when the agent does not compile.
    """
    copy = Path(tempfile.mkdtemp(prefix="eve-test-"))
    try:
        _copy(Path(app_root), copy)
        _own_workspace(copy, compile_to_disk(copy).manifest)
        prepared = _prepared(copy, max_turns)
        return TestAgent(prepared, copy=copy, model=model, tools=tools or {}, answers=answers)
    except BaseException:
        _forget(copy)
        raise


def _copy(app_root: Path, copy: Path) -> None:
    """``agent/`` copied; the app root's other entries linked, for what the agent names
    relative to it (an MCP server's script, an offline script file); its ``.eve/`` not."""
    shutil.copytree(app_root / AGENT_DIR, copy / AGENT_DIR)
    for entry in app_root.iterdir():
        if entry.name not in PROTECTED_PATHS:  # agent/ is copied, .eve/ is the copy's own
            (copy / entry.name).symlink_to(entry.resolve(), target_is_directory=entry.is_dir())


def _own_workspace(copy: Path, manifest: CompiledManifest | None) -> None:
    # the tools' workspace starts empty in the copy: a test's writes never reach the app's
    assert manifest is not None  # compile_to_disk raises CompileFailed otherwise
    configured = manifest.nodes[ROOT_NODE_ID].config.workspace or DEFAULT_WORKSPACE
    top = copy / Path(configured).parts[0]
    if top.is_symlink():
        top.unlink()


def _prepared(copy: Path, max_turns: int | None) -> AgentSetup:
    # on the offline model: the test's model replaces it after (_overridden), on every node
    preparing = _setup(copy, max_turns)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(preparing)
    # called from an async test: its loop is busy running it, so resolve in another thread
    with ThreadPoolExecutor(max_workers=1) as worker:
        return worker.submit(asyncio.run, preparing).result()


async def _setup(copy: Path, max_turns: int | None) -> AgentSetup:
    """As ``eve run`` prepares an agent, with the copy's own memory database."""
    setup = await build_setup(
        load_compiled_agent(copy),
        model=OFFLINE_DEFAULT,
        max_turns=max_turns,
        notify=_quiet,
        offline_fallback=True,
    )
    # not the database EVE_DATABASE_URL names, as eve run's would be: a test never writes a
    # real one
    database = f"sqlite:///{copy / MEMORY_DATABASE}"
    return with_memory(setup, MemoryHost(app_root=copy, database_url=database))


def _quiet(notice: str) -> None:
    del notice  # a test chose its model: no notice about the configured one


def _overridden(
    setup: AgentSetup, model: ModelChoice, tools: Mapping[str, Stub], copy: Path
) -> AgentSetup:
    known = stubbable(setup)
    for name in tools:
        if name not in known:
            raise UnknownStub(
                f"tools= stubs {name!r}, and the agent has no function tool of that name "
                f"(its function tools: {', '.join(sorted(known)) or 'none'})",
                tool=name,
                known=sorted(known),
            )
    return with_stubs(with_client(setup, _client(model, copy)), tools)


def _client(model: ModelChoice, copy: Path) -> ModelClient:
    if isinstance(model, str):
        return model_client(model, copy)
    if isinstance(model, Sequence | Mapping):
        # mypy keeps str here (a ModelClient narrowed to a Sequence might be one); it is not
        return script_model(cast(InlineScript, model), label="test")
    return model


def _forget(copy: Path) -> None:
    # the copy's modules and its place on sys.path go with it: a later agent (or the app's
    # own) must not import a file that is gone
    root = str(copy.resolve())
    while root in sys.path:
        sys.path.remove(root)
    authored = [
        name
        for name, module in sys.modules.items()
        if (name == AUTHORED_PACKAGE or name.startswith(AUTHORED_PACKAGE + "."))
        and _lives_in(module, root)
    ]
    # all found before any goes: a namespace package's path is recomputed from its parent
    for name in authored:
        del sys.modules[name]
    shutil.rmtree(copy, ignore_errors=True)


def _lives_in(module: ModuleType, root: str) -> bool:
    # a package without __init__.py has no __file__, only its __path__
    places = [getattr(module, "__file__", None), *list(getattr(module, "__path__", []))]
    return any(str(place).startswith(root) for place in places if place)
