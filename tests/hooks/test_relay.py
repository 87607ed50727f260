"""HookRelay: pluggy registration, call order, async subscribers, state, failure isolation."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from eve.context import EveContext, define_state, use_context
from eve.events import SessionEvent
from eve.hooks import HookRelay, define_hook, hookimpl
from eve.models.function import FunctionModel
from tests.execution.helpers import Script, calls, text, turn
from tests.execution.test_loop import PRICE
from tests.hooks.helpers import live_hook

seen = define_state("test.hooks.seen", [])


def record(label: str) -> Any:
    def subscriber(event: SessionEvent) -> None:
        seen.update(lambda items: [*items, f"{label}:{event.type}"])

    return subscriber


async def run(relay: HookRelay, script: Script) -> tuple[list[SessionEvent], list[str]]:
    events: list[SessionEvent] = []
    context = EveContext(session_id="s")
    await turn(
        client=FunctionModel(script),
        system="sys",
        tools=[PRICE],
        user_message="hi",
        on_event=events.append,
        hooks=relay,
        context=context,
    )
    with use_context(context):
        return events, seen.get()


def test_each_hook_is_a_pluggy_plugin_with_one_impl_per_event() -> None:
    hook = live_hook("audit", define_hook(events={"turn.started": print, "action.result": print}))
    relay = HookRelay.for_hooks([hook], plugins=False)
    plugin = relay.manager.get_plugin("agent/hooks/audit.py")
    assert plugin is not None
    impls = {c.name for c in relay.manager.get_hookcallers(plugin) or []}
    assert impls == {"turn_started", "action_result"}
    assert relay.implementations("step.started") == []
    assert relay.implementations("message.appended") == []


async def test_hooks_see_the_turn_in_order_and_update_state() -> None:
    first = live_hook("a_first", define_hook(events={"turn.started": record("a")}))
    both = record("b")
    second = live_hook(
        "b_second",
        define_hook(
            events={
                "turn.started": both,
                "step.started": both,
                "actions.requested": both,
                "action.result": both,
                "turn.completed": both,
            }
        ),
    )
    relay = HookRelay.for_hooks([first, second], plugins=False)
    events, state = await run(relay, Script(calls(("price", {"item": "x"})), text("ok")))
    assert state == [
        "a:turn.started",
        "b:turn.started",
        "b:step.started",
        "b:actions.requested",
        "b:action.result",
        "b:step.started",
        "b:turn.completed",
    ]
    assert "hook.failed" not in [e.type for e in events]


async def test_async_subscribers_are_awaited() -> None:
    async def later(event: SessionEvent) -> None:
        seen.update(lambda items: [*items, "async:" + event.type])

    relay = HookRelay.for_hooks(
        [live_hook("slow", define_hook(events={"turn.completed": later}))], plugins=False
    )
    _, state = await run(relay, Script(text("ok")))
    assert state == ["async:turn.completed"]


async def test_a_failing_hook_is_reported_and_the_turn_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(event: SessionEvent) -> None:
        raise RuntimeError("hooked on sk-ant-api03-" + "x" * 30)

    hooks = [
        live_hook("a_broken", define_hook(events={"turn.started": broken})),
        live_hook("b_fine", define_hook(events={"turn.started": record("fine")})),
    ]
    relay = HookRelay.for_hooks(hooks, plugins=False)
    with caplog.at_level(logging.ERROR, logger="eve.hooks"):
        events, state = await run(relay, Script(text("ok")))
    assert state == ["fine:turn.started"]
    kinds = [e.type for e in events]
    assert kinds[:2] == ["turn.started", "hook.failed"]
    assert kinds[-1] == "turn.completed"
    failed = events[1].data
    assert failed.hook == "a_broken"
    assert failed.source == "agent/hooks/a_broken.py"
    assert failed.event == "turn.started"
    assert failed.turn_id == "turn_0"
    assert failed.error.startswith("RuntimeError: hooked on ")
    assert "sk-ant-api03" not in failed.error
    [line] = [r for r in caplog.records if r.name == "eve.hooks"]
    assert "agent/hooks/a_broken.py" in line.getMessage()
    assert "sk-ant-api03" not in line.getMessage()


class AuditPlugin:
    """A framework plugin: any object with ``@hookimpl`` methods named after the specs."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    @hookimpl
    def turn_completed(self, event: SessionEvent) -> None:
        self.calls.append(event.data.stop_reason)

    @hookimpl
    def turn_started(self) -> None:  # pluggy lets an impl take fewer arguments than the spec
        self.calls.append("started")


async def test_framework_plugins_run_after_authored_hooks() -> None:
    plugin = AuditPlugin()
    relay = HookRelay()
    # as for_hooks does with entry points: plugins first, so pluggy calls them last
    relay.register_plugin(plugin, name="audit")
    relay.register_hook(live_hook("mine", define_hook(events={"turn.completed": record("mine")})))
    order = [i.plugin_name for i in relay.implementations("turn.completed")]
    assert order == ["agent/hooks/mine.py", "audit"]
    await run(relay, Script(text("ok")))
    assert plugin.calls == ["started", "complete"]


async def test_turn_failed_reaches_its_hooks_before_the_error_propagates() -> None:
    def model(request: object) -> Any:
        raise RuntimeError("provider down")

    relay = HookRelay.for_hooks(
        [live_hook("alarm", define_hook(events={"turn.failed": record("alarm")}))], plugins=False
    )
    context = EveContext(session_id="s")
    with pytest.raises(RuntimeError, match="provider down"):
        await turn(
            client=FunctionModel(model),
            system="sys",
            tools=[],
            user_message="hi",
            hooks=relay,
            context=context,
        )
    with use_context(context):
        assert seen.get() == ["alarm:turn.failed"]
