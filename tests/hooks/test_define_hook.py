"""define_hook: what a valid definition holds and how invalid ones are refused."""

from __future__ import annotations

from typing import Any

import pytest

import eve
import eve.hooks
from eve.errors import AuthoringError
from eve.hooks import HOOK_EVENTS, HookDefinition, define_hook
from eve.hooks.specs import SPEC_NAMES, EveHookSpecs


def on_event(event: Any) -> None:
    pass


async def on_event_async(event: Any) -> None:
    pass


def test_a_definition_keeps_its_subscribers_in_order() -> None:
    hook = define_hook(events={"turn.completed": on_event, "turn.started": on_event_async})
    assert isinstance(hook, HookDefinition)
    assert list(hook.events) == ["turn.completed", "turn.started"]
    assert hook.defined_in == __name__


def test_define_hook_is_exported_where_authors_look() -> None:
    assert eve.define_hook is define_hook
    assert eve.hooks.define_hook is define_hook
    assert eve.hooks.hookimpl.project_name == "eve"


def test_every_hook_event_has_one_spec() -> None:
    specs = {name for name in vars(EveHookSpecs) if not name.startswith("_")}
    assert specs == set(SPEC_NAMES.values())
    assert list(SPEC_NAMES) == list(HOOK_EVENTS)


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ({}, "non-empty dict"),
        ("turn.completed", "non-empty dict"),
        ({"turn.complete": on_event}, "did you mean 'turn.completed'?"),
        ({"action.requested": on_event}, "did you mean 'actions.requested'?"),
        ({"message.appended": on_event}, "not an event a hook can subscribe to"),
        ({"turn.started": "on_event"}, "must be a function taking the event, not str"),
        ({"turn.started": lambda: None}, "must accept exactly one argument"),
        ({"turn.started": lambda a, b: None}, "must accept exactly one argument"),
    ],
)
def test_invalid_definitions_are_refused(events: Any, message: str) -> None:
    with pytest.raises(AuthoringError, match=message.replace("?", r"\?").replace("(", r"\(")):
        define_hook(events=events)


def test_an_async_generator_subscriber_is_refused() -> None:
    async def streaming(event: Any) -> Any:
        yield event

    with pytest.raises(AuthoringError, match="async generator"):
        define_hook(events={"turn.started": streaming})
