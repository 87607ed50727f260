"""``define_state``: typed per-session state, the right home for what a module global is not."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Generic, TypeVar

from eve.context.keys import JSON_CODEC, Codec, ContextKey
from eve.errors import AuthoringError

T = TypeVar("T")

_MISSING = object()


class StateSlot(Generic[T]):
    """One named slot of session state; each session starts from a copy of ``initial``."""

    def __init__(self, name: str, initial: T, codec: Codec[T]) -> None:
        self.name = name
        self._initial = initial
        self._key: ContextKey[T] = ContextKey(f"state:{name}", codec=codec)

    def get(self) -> T:
        value = self._key.get(_MISSING)  # type: ignore[arg-type]
        if value is _MISSING:
            value = copy.deepcopy(self._initial)
            self._key.set(value)
        return value

    def set(self, value: T) -> None:
        self._key.set(value)

    def update(self, fn: Callable[[T], T]) -> T:
        """Replace the value with ``fn(value)`` and return the new value."""
        value = fn(self.get())
        self._key.set(value)
        return value


def define_state(name: str, initial: T, *, codec: Codec[T] | None = None) -> StateSlot[T]:
    """Declare a slot of per-session state, saved with the session's checkpoints.

    Values must be JSON-ready unless a ``codec`` is given. Names starting with ``eve.`` are
    reserved for the framework.
    """
    if not name or name.startswith("eve."):
        raise AuthoringError(f"define_state name {name!r} is empty or reserved (eve.*)")
    return StateSlot(name, initial, codec or JSON_CODEC)
