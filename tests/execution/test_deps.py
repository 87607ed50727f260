"""``define_agent(deps=factory)`` in a compiled agent's turns, in process: ``ctx.deps`` in
tools and hooks, built once per turn from the turn's ``TurnInfo`` and closed when the turn
ends (however it ends), a factory that raises as ``DepsFactoryFailed``, and subagents
inheriting the factory or declaring their own."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from eve._agent_setup import build_setup
from eve.auth.principal import Principal
from eve.compiler import compile_to_disk
from eve.context.active import EveContext
from eve.errors import DepsFactoryFailed, ModelProtocolError
from eve.events import SessionEvent
from eve.execution import TurnEnvironment, run_agent
from eve.execution.inline_tasks import InlineTasks
from eve.execution.setup import AgentSetup
from eve.messages import ToolResultMessage
from eve.models.function import FunctionModel
from eve.runtime import load_compiled_agent
from tests.conftest import AppFactory
from tests.execution.helpers import Script, calls, text

ALICE = Principal(id="alice", kind="user")

#: a deps class that logs its life to ``deps.log`` beside agent/ (the test reads it back)
SHOP = """
    from pathlib import Path
    from eve import TurnInfo

    LOG = Path(__file__).parents[2] / "deps.log"

    def log(line: str) -> None:
        with LOG.open("a") as out:
            out.write(line + "\\n")

    class Shop:
        def __init__(self, info: TurnInfo) -> None:
            self.customer = info.principal.id
            self.session = info.session_id
            self.node = info.node_id
            log(f"open {info.node_id} {info.turn_id}")

        def close(self) -> None:
            log(f"close {self.node}")
"""

WHOAMI = """
    from eve.tools import ToolContext, tool
    from agent.lib.shop import Shop

    @tool
    def whoami(ctx: ToolContext[Shop]) -> str:
        '''Say whom the shop serves.'''
        return f"{ctx.deps.customer} in {ctx.deps.session}"
"""


def shop_app(make_app: AppFactory, agent: str, **files: str) -> Path:
    root = make_app(
        {
            "agent/agent.py": agent,
            "agent/lib/__init__.py": "",
            "agent/lib/shop.py": SHOP,
            "agent/tools/whoami.py": WHOAMI,
            **files,
        }
    )
    compile_to_disk(root)
    return root


async def setup_of(root: Path, script: Script) -> AgentSetup:
    built = await build_setup(
        load_compiled_agent(root), model=None, max_turns=None, notify=print, offline_fallback=True
    )
    return replace(built, client=FunctionModel(script))


def env(session: str = "ses_a", turn: str = "turn_0", **more: object) -> TurnEnvironment:
    context = EveContext(session_id=session, principal=ALICE)
    return TurnEnvironment(session_id=session, turn_id=turn, context=context, **more)  # type: ignore[arg-type]


def results(messages: list[object]) -> list[str]:
    return [m.content for m in messages if isinstance(m, ToolResultMessage)]  # type: ignore[misc]


def log_of(root: Path) -> list[str]:
    return (root / "deps.log").read_text().splitlines()


AGENT_SHOP = """
    from eve import define_agent
    from agent.lib.shop import Shop
    default = define_agent(deps=Shop)
"""


async def test_a_tool_reads_the_turns_deps_built_and_closed_once_per_turn(
    make_app: AppFactory,
) -> None:
    root = shop_app(make_app, AGENT_SHOP)
    script = Script(calls(("whoami", {}), ("whoami", {})), text("done"), calls(("whoami", {})))
    setup = await setup_of(root, script)
    first = await run_agent(setup, "who?", env=env(turn="turn_0"))
    assert results(first.messages) == ["alice in ses_a", "alice in ses_a"]
    # built at the turn's start, shared by its calls, closed at its end
    assert log_of(root) == ["open __root__ turn_0", "close __root__"]
    script.responses.append(text("again"))
    await run_agent(setup, "again?", history=first.messages, env=env(turn="turn_1"))
    assert log_of(root)[2:] == ["open __root__ turn_1", "close __root__"]


async def test_a_factory_that_raises_fails_the_turn_by_name_before_any_model_call(
    make_app: AppFactory,
) -> None:
    agent = """
        from eve import define_agent

        def connect(info):
            raise ConnectionRefusedError("the shop database is down")

        default = define_agent(deps=connect)
    """
    root = shop_app(make_app, agent)
    script = Script(text("never"))
    events: list[SessionEvent] = []
    with pytest.raises(DepsFactoryFailed) as raised:
        await run_agent(await setup_of(root, script), "hi", env=env(on_event=events.append))
    assert raised.value.node_id == "__root__"
    assert str(raised.value).startswith(
        "the deps factory of agent/agent.py raised ConnectionRefusedError: the shop database "
        "is down"
    )
    assert script.count == 0
    assert events[-1].type == "turn.failed"
    assert "DepsFactoryFailed" in events[-1].data.error  # type: ignore[attr-defined]


async def test_generator_deps_see_how_the_turn_ended_and_async_ones_are_awaited(
    make_app: AppFactory,
) -> None:
    agent = """
        from eve import define_agent
        from agent.lib.shop import log

        async def session(info):
            log("begin")
            try:
                yield {"customer": info.principal.id}
            except Exception as error:
                log(f"rollback after {type(error).__name__}")
                raise
            else:
                log("commit")

        default = define_agent(deps=session)
    """
    tool = """
        from eve.tools import ToolContext, tool

        @tool
        async def whoami(ctx: ToolContext[dict[str, str]]) -> str:
            '''Say whom the shop serves.'''
            return ctx.deps["customer"]
    """
    root = shop_app(make_app, agent, **{"agent/tools/whoami.py": tool})
    done = await run_agent(
        await setup_of(root, Script(calls(("whoami", {})), text("ok"))), "hi", env=env()
    )
    assert results(done.messages) == ["alice"]
    assert log_of(root) == ["begin", "commit"]
    # a turn that fails (the model's stream breaks off) is rolled back
    with pytest.raises(ModelProtocolError, match="without a done event"):
        await run_agent(await setup_of(root, Script([])), "hi", env=env())
    assert log_of(root)[2:] == ["begin", "rollback after ModelProtocolError"]


async def test_hooks_read_deps_with_current_deps_checked_against_a_type(
    make_app: AppFactory,
) -> None:
    hook = """
        from eve.context import current_deps
        from eve.errors import DepsTypeMismatch
        from eve.hooks import define_hook
        from agent.lib.shop import Shop, log

        def on_result(event):
            shop = current_deps(Shop)
            log(f"hook sees {shop.customer}")
            try:
                current_deps(int)
            except DepsTypeMismatch as error:
                log(f"mismatch {error.expected} {error.actual}")

        default = define_hook(events={"action.result": on_result})
    """
    root = shop_app(make_app, AGENT_SHOP, **{"agent/hooks/audit.py": hook})
    script = Script(calls(("whoami", {})), text("done"))
    await run_agent(await setup_of(root, script), "hi", env=env())
    assert log_of(root) == [
        "open __root__ turn_0",
        "hook sees alice",
        "mismatch int Shop",
        "close __root__",
    ]


SUBAGENT = """
    from eve import define_agent
    default = define_agent(description="Looks things up.", model="offline/test")
"""


async def test_a_subagent_inherits_its_callers_factory_for_a_turn_of_its_own(
    make_app: AppFactory,
) -> None:
    root = shop_app(
        make_app,
        AGENT_SHOP,
        **{
            "agent/subagents/clerk/agent.py": SUBAGENT,
            "agent/subagents/clerk/tools/ask_clerk.py": WHOAMI.replace("whoami", "ask_clerk"),
        },
    )
    setup = await setup_of(root, Script(calls(("clerk", {"message": "who?"})), text("done")))
    done = await run_agent(setup, "hi", env=env(tasks=InlineTasks(setup=setup)))
    # the clerk's turn built its own Shop (its child session's), and closed it first
    assert log_of(root) == [
        "open __root__ turn_0",
        "open clerk turn_0",
        "close clerk",
        "close __root__",
    ]
    [answer] = results(done.messages)
    assert "alice in ses_" in answer and "alice in ses_a" not in answer


async def test_a_subagent_with_a_factory_of_its_own_uses_it(make_app: AppFactory) -> None:
    own = """
        from eve import define_agent
        from agent.lib.shop import log

        def counter(info):
            log(f"counter for {info.node_id}")
            return {"customer": "the counter"}

        default = define_agent(description="Looks things up.", model="offline/test", deps=counter)
    """
    tool = """
        from eve.tools import ToolContext, tool

        @tool
        def ask_clerk(ctx: ToolContext) -> str:
            '''Ask the clerk.'''
            return ctx.deps["customer"]
    """
    root = shop_app(
        make_app,
        AGENT_SHOP,
        **{
            "agent/subagents/clerk/agent.py": own,
            "agent/subagents/clerk/tools/ask_clerk.py": tool,
        },
    )
    setup = await setup_of(root, Script(calls(("clerk", {"message": "who?"})), text("done")))
    done = await run_agent(setup, "hi", env=env(tasks=InlineTasks(setup=setup)))
    assert log_of(root) == ["open __root__ turn_0", "counter for clerk", "close __root__"]
    assert "the counter" in results(done.messages)[0]


async def test_a_teardown_that_raises_is_logged_and_the_turn_still_completes(
    make_app: AppFactory, caplog: pytest.LogCaptureFixture
) -> None:
    agent = """
        from eve import define_agent

        class Flaky:
            async def aclose(self):
                raise OSError("socket already gone")

        default = define_agent(deps=lambda: Flaky())
    """
    root = shop_app(make_app, agent)
    done = await run_agent(await setup_of(root, Script(text("fine"))), "hi", env=env())
    assert done.stop_reason == "complete"
    assert "closing the turn's deps failed: OSError: socket already gone" in caplog.text
