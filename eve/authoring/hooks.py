"""Hook definitions: ``define_hook(events={...})``, lifecycle subscribers of ``agent/hooks/``."""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from eve.authoring._caller import caller_module
from eve.errors import AuthoringError

#: the session events a hook may subscribe to, in the order a turn produces them
HOOK_EVENTS: tuple[str, ...] = (
    "session.started",
    "turn.started",
    "step.started",
    "actions.requested",
    "action.result",
    "turn.completed",
    "turn.failed",
    "session.completed",
)

#: ``subscriber(event)``: sync or async; the return value is ignored
Subscriber = Callable[[Any], Any]


@dataclass(frozen=True, kw_only=True)
class HookDefinition:
    """A hook as authored. The file name under ``hooks/`` is its name.

    Each subscriber is called with the ``SessionEvent`` of its event type, inside the
    session's eve context (so ``define_state`` slots can be read and updated).
    """

    #: event type → subscriber, in the order given
    events: dict[str, Subscriber]
    #: the module whose code made this definition (see the export rule)
    defined_in: str | None = None


def _check_event(name: object) -> str:
    if not isinstance(name, str):
        raise AuthoringError(f"define_hook(events=...) keys are event types, not {name!r}")
    if name in HOOK_EVENTS:
        return name
    close = difflib.get_close_matches(name, HOOK_EVENTS, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise AuthoringError(
        f"define_hook: {name!r} is not an event a hook can subscribe to; {hint}"
        f"choose from {', '.join(HOOK_EVENTS)}"
    )


def _check_subscriber(event: str, subscriber: object) -> Subscriber:
    if not callable(subscriber):
        raise AuthoringError(
            f"define_hook: the subscriber of {event!r} must be a function taking the event, "
            f"not {type(subscriber).__name__}"
        )
    if inspect.isasyncgenfunction(subscriber):
        raise AuthoringError(
            f"define_hook: the subscriber of {event!r} is an async generator; hooks observe "
            "events and return nothing, so make it a plain or async function"
        )
    try:
        inspect.signature(subscriber).bind(object())
    except TypeError:
        raise AuthoringError(
            f"define_hook: the subscriber of {event!r} must accept exactly one argument, the "
            "event (def on_event(event): ...)"
        ) from None
    except ValueError:
        pass  # a builtin without a signature: trust it
    return subscriber


def define_hook(*, events: Mapping[str, Subscriber]) -> HookDefinition:
    """Define lifecycle subscribers: ``events`` maps an event type to a function of the event.

    Raises ``AuthoringError`` for an empty mapping, an unknown event type (with the closest
    known one) or a subscriber that cannot take the event.
    """
    if not isinstance(events, Mapping) or not events:
        raise AuthoringError(
            "define_hook(events=...) needs a non-empty dict of event type → function, e.g. "
            'define_hook(events={"turn.completed": on_turn_completed})'
        )
    checked = {_check_event(name): _check_subscriber(name, fn) for name, fn in events.items()}
    return HookDefinition(events=checked, defined_in=caller_module())
