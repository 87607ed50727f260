"""Tasks in the loop, in process: subagents (inheritance, available_in_subagents, runtime
configuration and its errors) and workflow tools (questions, events, sleeps)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from eve._cancellation import CancelSignal
from eve.authoring.agent import RuntimeConfig
from eve.authoring.workflow import Question
from eve.cli.agent_setup import prepare
from eve.context.active import EveContext
from eve.errors import SubagentConfigInvalid, SubagentConfigMissing
from eve.events import ActionResult, SessionEvent
from eve.execution import TurnEnvironment
from eve.execution.inline_tasks import InlineTasks
from eve.execution.loop import run_agent
from eve.execution.result import RunResult
from eve.execution.setup import DEFAULT_MAX_TURNS, AgentSetup
from eve.execution.subagents import effective_setup
from eve.messages import ToolResultMessage
from tests.conftest import AppFactory

AGENT = """
    from eve import define_agent
    default = define_agent(model="offline/script:script.json", limits={"max_turns": 4})
"""
ECHO = """
    from eve.tools import ToolContext, tool

    @tool{options}
    def {name}(text: str, ctx: ToolContext) -> str:
        '''{name}.'''
        return "{label}:" + ctx.node_id + ":" + text
"""
HELPER = """
    from eve import define_agent
    from agent.lib.keys import HELPER_CONFIG
    default = define_agent(description="Helps.", model="offline/script:compiled.json",
                           reasoning="high", limits={"max_turns": 2}{runtime})
"""
KEYS = """
    from eve.authoring.agent import runtime_config_key
    HELPER_CONFIG = runtime_config_key("helper.config")
"""
CONFIGURE = """
    from agent.lib.keys import HELPER_CONFIG
    from eve.tools import tool

    @tool
    def configure(model: str) -> str:
        '''Choose the helper's model.'''
        HELPER_CONFIG.set({"model": model})
        return "configured"
"""


def echo(name: str, label: str, options: str = "") -> str:
    return ECHO.replace("{name}", name).replace("{label}", label).replace("{options}", options)


def tree(make_app: AppFactory, *, runtime: bool = False, **extra: str) -> Path:
    return make_app(
        {
            "agent/agent.py": AGENT,
            "agent/instructions.md": "Delegate.\n",
            "agent/lib/__init__.py": "",
            "agent/lib/keys.py": KEYS,
            "agent/tools/shout.py": echo("shout", "root"),
            "agent/tools/lookup.py": echo("lookup", "root"),
            "agent/tools/secret.py": echo("secret", "root", "(available_in_subagents=False)"),
            "agent/tools/configure.py": CONFIGURE,
            "agent/subagents/helper/agent.py": HELPER.replace(
                "{runtime}", ", runtime_config=HELPER_CONFIG" if runtime else ""
            ),
            "agent/subagents/helper/instructions.md": "Help.\n",
            "agent/subagents/helper/tools/lookup.py": echo("lookup", "helper"),
            "agent/subagents/helper/tools/hidden.py": echo(
                "hidden", "helper", "(available_in_subagents=False)"
            ),
            **extra,
        },
        minimal=False,
    )


def write(root: Path, name: str, responses: Any) -> None:
    (root / name).write_text(json.dumps(responses), encoding="utf-8")


def tool_call(name: str, **data: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "input": data}]}


async def turn(setup: AgentSetup, events: list[SessionEvent], **tasks: Any) -> RunResult:
    env = TurnEnvironment(on_event=events.append, tasks=InlineTasks(setup=setup, **tasks))
    return await run_agent(setup, "go", env=env)


def results(result: RunResult) -> dict[str, ToolResultMessage]:
    return {m.name or "": m for m in result.messages if isinstance(m, ToolResultMessage)}


async def test_a_delegated_session_inherits_tools_but_never_unavailable_ones(
    make_app: AppFactory,
) -> None:
    root = tree(make_app)
    write(root, "script.json", [tool_call("helper", message="look it up"), {"text": "ok"}])
    write(
        root,
        "compiled.json",
        [
            {
                "tool_calls": [
                    {"name": "lookup", "input": {"text": "a"}},
                    {"name": "shout", "input": {"text": "b"}},
                    {"name": "secret", "input": {"text": "c"}},
                ]
            },
            {"text": "helped"},
        ],
    )
    setup = await prepare(root, model=None, max_turns=None)
    helper = setup.node("helper")
    assert [t.name for t in helper.agent.tools] == ["lookup", "configure", "shout"]
    assert {t.name for t in setup.agent.tools} >= {"secret", "helper", "shout"}
    events: list[SessionEvent] = []
    result = await turn(setup, events)
    assert result.final_text == "ok"
    assert results(result)["helper"].content == "helped"
    child = [e.data for e in events if isinstance(e, ActionResult) and e.data.parent]
    outputs = {d.name: d.output for d in child}
    # its own lookup, the root's shout in the root's scope, no secret
    assert outputs["lookup"] == "helper:helper:a"
    assert outputs["shout"] == "root:helper:b"
    assert outputs["secret"].startswith("unknown tool 'secret'")
    assert [e.meta.index for e in events] == list(range(len(events)))  # one dense stream


async def test_runtime_config_replaces_the_compiled_one_as_a_whole(make_app: AppFactory) -> None:
    root = tree(make_app, runtime=True)
    write(root, "script.json", [])
    write(root, "compiled.json", [])
    setup = (await prepare(root, model=None, max_turns=None)).node("helper")
    assert (setup.reasoning, setup.max_turns) == ("high", 2)
    caller = EveContext(session_id="s", values={"helper.config": {"model": "offline/test"}})
    effective = effective_setup(setup, caller)
    # what the runtime configuration leaves out is unset, not taken from agent.py
    assert effective.client.model_id == "offline/test"
    assert (effective.reasoning, effective.max_turns) == (None, DEFAULT_MAX_TURNS)
    given = RuntimeConfig(model="offline/test", reasoning="low", limits={"max_turns": 3})
    caller.values["helper.config"] = given
    again = effective_setup(setup, caller)
    assert (again.reasoning, again.max_turns) == ("low", 3)


async def test_runtime_config_missing_or_invalid_fails_the_call_clearly(
    make_app: AppFactory,
) -> None:
    root = tree(make_app, runtime=True)
    write(root, "script.json", [tool_call("helper", message="go"), {"text": "told"}])
    write(root, "compiled.json", [])
    setup = await prepare(root, model=None, max_turns=None)
    helper = setup.node("helper")
    with pytest.raises(SubagentConfigMissing, match=r"'helper' is configured at run time from"):
        effective_setup(helper, EveContext(session_id="s"))
    bad = EveContext(session_id="s", values={"helper.config": {"model": "no-prefix"}})
    with pytest.raises(SubagentConfigInvalid, match="needs a provider prefix"):
        effective_setup(helper, bad)
    # in a turn: the call fails with the message, nothing of the helper runs
    events: list[SessionEvent] = []
    result = await turn(setup, events)
    failed = results(result)["helper"]
    assert failed.is_error and "SubagentConfigMissing" in failed.content
    assert not [e for e in events if e.data.parent]


async def test_a_tool_of_the_caller_configures_the_subagent(make_app: AppFactory) -> None:
    root = tree(make_app, runtime=True)
    write(
        root,
        "script.json",
        [
            tool_call("configure", model="offline/script:runtime.json"),
            tool_call("helper", message="go"),
            {"text": "done"},
        ],
    )
    write(root, "runtime.json", {"helper": [{"text": "configured at run time"}]})
    write(root, "compiled.json", [])
    setup = await prepare(root, model=None, max_turns=None)
    result = await turn(setup, [])
    assert results(result)["helper"].content == "configured at run time"


WAITER = """
    from eve.tools import WorkflowContext, define_workflow_tool

    async def wait(data, ctx: WorkflowContext):
        if data.get("what") == "event":
            return await ctx.wait_for_event("go")
        if data.get("what") == "sleep":
            await ctx.sleep(0.01)
            return "slept"
        await ctx.progress("asking")
        return await ctx.ask("Ready?", options=["yes", "no"])

    default = define_workflow_tool(description="Wait.", run=wait)
"""


async def test_workflow_tools_in_process_ask_sleep_and_refuse_events(
    make_app: AppFactory,
) -> None:
    root = tree(make_app, **{"agent/tools/wait.py": WAITER})
    write(root, "compiled.json", [])
    write(
        root,
        "script.json",
        [
            {
                "tool_calls": [
                    {"name": "wait", "input": {"what": "ask"}},
                    {"name": "wait", "input": {"what": "sleep"}},
                    {"name": "wait", "input": {"what": "event"}},
                ]
            },
            {"text": "done"},
        ],
    )
    setup = await prepare(root, model=None, max_turns=None)
    asked: list[Question] = []

    async def answer(question: Question) -> str:
        asked.append(question)
        return "no"

    events: list[SessionEvent] = []
    result = await turn(setup, events, ask=answer)
    outputs = [m for m in result.messages if isinstance(m, ToolResultMessage)]
    assert [(m.content, m.is_error) for m in outputs[:2]] == [("no", False), ("slept", False)]
    assert outputs[2].is_error and "WaitUnavailable" in outputs[2].content
    assert "`eve dev` or `eve serve`" in outputs[2].content
    assert [(q.question, q.options) for q in asked] == [("Ready?", ["yes", "no"])]
    types = [e.type for e in events]
    assert types.count("task.started") == types.count("task.settled") == 3
    assert "action.partial" in types and "input.resolved" in types
    # nobody to ask: the call fails and says so
    result = await turn(setup, [])
    first = next(m for m in result.messages if isinstance(m, ToolResultMessage))
    assert first.is_error and "NoOneToAsk" in first.content


SLEEPER = """
    from eve.tools import WorkflowContext, define_workflow_tool

    async def nap(data, ctx: WorkflowContext):
        await ctx.sleep(60)
        return "rested"

    default = define_workflow_tool(description="Nap.", run=nap)
"""


async def test_a_task_cancelled_while_it_waits_reports_that_not_never_ran(
    make_app: AppFactory,
) -> None:
    root = tree(make_app, **{"agent/tools/nap.py": SLEEPER})
    write(root, "compiled.json", [])
    write(root, "script.json", [tool_call("nap"), {"text": "never"}])
    setup = await prepare(root, model=None, max_turns=None)
    signal = CancelSignal()

    def cancel_when_started(event: SessionEvent) -> None:
        if event.type == "task.started":
            asyncio.get_running_loop().call_later(0.05, signal.cancel, "cancelled")

    env = TurnEnvironment(
        on_event=cancel_when_started, signal=signal, tasks=InlineTasks(setup=setup)
    )
    result = await run_agent(setup, "go", env=env)
    assert result.stop_reason == "aborted"
    nap = results(result)["nap"]
    assert nap.is_error and "TaskCancelled" in nap.content


QUICK = """
    from pathlib import Path
    from eve.tools import WorkflowContext, define_workflow_tool

    async def run(data, ctx: WorkflowContext):
        with Path("quick.log").open("a") as log:
            log.write("ran\\n")
        return "quick done"

    default = define_workflow_tool(description="Quick.", run=run)
"""


async def test_a_task_then_concurrent_calls_keep_the_tasks_result_and_run_it_once(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tree(make_app, **{"agent/tools/quick.py": QUICK})
    monkeypatch.chdir(root)
    write(root, "compiled.json", [])
    three = {
        "tool_calls": [
            {"name": "quick", "input": {}},
            {"name": "shout", "input": {"text": "a"}},
            {"name": "lookup", "input": {"text": "b"}},
        ]
    }
    write(root, "script.json", [three, {"text": "done"}])
    setup = await prepare(root, model=None, max_turns=None)
    events: list[SessionEvent] = []
    result = await turn(setup, events)
    names = [m.name for m in result.messages if isinstance(m, ToolResultMessage)]
    assert names == ["quick", "shout", "lookup"]  # the model's order
    assert results(result)["quick"].content == "quick done"
    assert (root / "quick.log").read_text() == "ran\n"
