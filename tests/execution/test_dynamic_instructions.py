"""``agent/instructions.py`` in a compiled agent's turns, in process: evaluated once per turn
after the deps are built, appended to instructions.md, a subagent's own, and the named
errors of a function that raises or returns no string."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from eve import InstructionsContext, define_instructions
from eve._agent_setup import build_setup
from eve.auth.principal import Principal
from eve.compiler import compile_to_disk
from eve.context.active import EveContext
from eve.errors import AuthoringError, InstructionsFailed
from eve.execution import TurnEnvironment, agent_setup, run_agent
from eve.execution.inline_tasks import InlineTasks
from eve.execution.setup import AgentSetup
from eve.models.function import FunctionModel
from eve.runtime import load_compiled_agent
from tests.conftest import AppFactory
from tests.execution.helpers import Script, calls, text

ALICE = Principal(id="alice", kind="user")

DYNAMIC = """
    from pathlib import Path
    from eve import InstructionsContext, define_instructions

    COUNT = Path(__file__).parents[1] / "evaluations"

    @define_instructions
    async def instructions(ctx: InstructionsContext[dict[str, str]]) -> str:
        n = int(COUNT.read_text()) + 1 if COUNT.exists() else 1
        COUNT.write_text(str(n))
        return (
            f"Evaluation {n} for {ctx.principal.id} ({ctx.node_id}, {ctx.turn_id}); "
            f"tier {ctx.deps['tier']}; asked: {ctx.message}"
        )
"""

AGENT = """
    from eve import define_agent
    default = define_agent(deps=lambda info: {"tier": "gold"})
"""


def compiled(make_app: AppFactory, files: dict[str, str]) -> Path:
    root = make_app(files)
    compile_to_disk(root)
    return root


async def setup_of(root: Path, script: Script) -> tuple[AgentSetup, FunctionModel]:
    built = await build_setup(
        load_compiled_agent(root), model=None, max_turns=None, notify=print, offline_fallback=True
    )
    model = FunctionModel(script)
    return replace(built, client=model), model


def env(turn: str = "turn_0", **more: object) -> TurnEnvironment:
    context = EveContext(session_id="ses_a", principal=ALICE)
    return TurnEnvironment(session_id="ses_a", turn_id=turn, context=context, **more)  # type: ignore[arg-type]


def systems(model: FunctionModel) -> list[str]:
    return [request.system for request in model.requests]


async def test_the_prompt_is_instructions_md_then_this_turns_dynamic_text(
    make_app: AppFactory,
) -> None:
    root = compiled(make_app, {"agent/agent.py": AGENT, "agent/instructions.py": DYNAMIC})
    script = Script(calls(("missing", {})), text("one"), text("two"))
    setup, model = await setup_of(root, script)
    first = await run_agent(setup, "hello", env=env("turn_0"))
    await run_agent(setup, "again", history=first.messages, env=env("turn_1"))
    turn_0 = "Be helpful.\n\nEvaluation 1 for alice (__root__, turn_0); tier gold; asked: hello\n"
    # both steps of turn 0 under its one evaluation; turn 1 evaluated anew
    assert systems(model) == [
        turn_0,
        turn_0,
        "Be helpful.\n\nEvaluation 2 for alice (__root__, turn_1); tier gold; asked: again\n",
    ]


async def test_instructions_py_alone_is_the_root_prompt_and_a_subagent_has_its_own(
    make_app: AppFactory,
) -> None:
    clerk = """
        from eve import define_instructions

        @define_instructions
        def instructions(ctx) -> str:
            return f"You are the clerk of {ctx.principal.id}."
    """
    root = make_app(
        {
            "agent/agent.py": AGENT,
            "agent/instructions.py": DYNAMIC,
            "agent/subagents/clerk/agent.py": """
                from eve import define_agent
                default = define_agent(description="Answers.")
            """,
            "agent/subagents/clerk/instructions.py": clerk,
        }
    )
    (root / "agent/instructions.md").unlink()
    compile_to_disk(root)
    script = Script(calls(("clerk", {"message": "hi"})), text("clerk says hi"), text("done"))
    setup, model = await setup_of(root, script)
    clerk_setup = setup.node("clerk")
    setup = replace(setup, subagents={"clerk": replace(clerk_setup, client=model)})
    await run_agent(setup, "go", env=env(tasks=InlineTasks(setup=setup)))
    root_prompt = "Evaluation 1 for alice (__root__, turn_0); tier gold; asked: go\n"
    assert systems(model) == [root_prompt, "You are the clerk of alice.\n", root_prompt]


async def test_a_function_that_raises_or_returns_no_string_is_instructions_failed() -> None:
    def broken(ctx: InstructionsContext) -> str:
        raise KeyError("tier")

    def wrong(ctx: InstructionsContext) -> str:
        return 42  # type: ignore[return-value]

    script = Script(text("never"))
    for render, message in [
        (broken, "the dynamic instructions of node '__root__' raised KeyError: 'tier'"),
        (wrong, "the dynamic instructions of node '__root__' returned int, not the prompt"),
    ]:
        setup = agent_setup(FunctionModel(script), dynamic_instructions=render)
        with pytest.raises(InstructionsFailed, match=message) as raised:
            await run_agent(setup, "hi")
        assert raised.value.node_id == "__root__"
    assert script.count == 0


async def test_instructions_failed_names_the_file_of_a_compiled_agent(
    make_app: AppFactory,
) -> None:
    failing = """
        from eve import define_instructions

        @define_instructions
        def instructions(ctx):
            return ctx.deps.tier
    """
    root = compiled(make_app, {"agent/instructions.py": failing})
    setup, _ = await setup_of(root, Script(text("never")))
    with pytest.raises(InstructionsFailed) as raised:
        await run_agent(setup, "hi")
    assert raised.value.logical_path == "agent/instructions.py"
    assert str(raised.value).startswith(
        "agent/instructions.py raised AttributeError: 'NoneType' object has no attribute 'tier'"
    )


def test_define_instructions_refuses_what_it_cannot_call_per_turn() -> None:
    def two(ctx: object, more: object) -> str:
        return ""

    def generator(ctx: object) -> object:
        yield "no"

    with pytest.raises(AuthoringError, match="must take exactly one argument"):
        define_instructions(two)  # type: ignore[arg-type]
    with pytest.raises(AuthoringError, match="is a generator"):
        define_instructions(generator)  # type: ignore[arg-type]
    with pytest.raises(AuthoringError, match="not str"):
        define_instructions("Be helpful.")  # type: ignore[arg-type]
