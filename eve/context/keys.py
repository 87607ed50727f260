"""``ContextKey``: a named, optionally serializable slot in the active eve context."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from eve.context._registry import registered_keys
from eve.context.active import require_context
from eve.errors import AuthoringError, ContextKeyCollision

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class Codec(Generic[T]):
    """How a value becomes JSON-ready data for a checkpoint, and back."""

    encode: Callable[[T], Any]
    decode: Callable[[Any], T]


def _identity(value: Any) -> Any:
    return value


#: for values that are already JSON-ready (numbers, strings, lists, dicts)
JSON_CODEC: Codec[Any] = Codec(encode=_identity, decode=_identity)

_MISSING: Any = object()


class ContextKey(Generic[T]):
    """A key into the active eve context.

    A key with a ``codec`` is serialized into the session's checkpoint; one without lives only
    as long as the context. Registering a name again with the same codec presence is allowed
    (a module reloaded in development); with a different presence it raises at once, because
    checkpoints written under one shape would silently fail to restore under the other.
    """

    def __init__(self, name: str, *, codec: Codec[T] | None = None) -> None:
        if not name:
            raise AuthoringError("ContextKey needs a name")
        self.name = name
        self.codec = codec
        keys = registered_keys()
        existing = keys.get(name)
        if existing is not None and (existing.codec is None) != (codec is None):
            had = "with" if existing.codec is not None else "without"
            raise ContextKeyCollision(
                f'ContextKey "{name}" is already registered {had} a codec; registering it '
                f"{'without' if codec is None else 'with'} one would silently break "
                "serialization of checkpoints that hold it. Give one of them another name.",
                key=name,
            )
        keys[name] = self

    def get(self, default: T = _MISSING) -> T:
        """The value in the active context, or ``default``; raises with no active context."""
        values = require_context(f'ContextKey "{self.name}"').values
        if self.name in values:
            value: T = values[self.name]
            return value
        if default is _MISSING:
            raise KeyError(f'ContextKey "{self.name}" has no value in this context')
        return default

    def set(self, value: T) -> None:
        require_context(f'ContextKey "{self.name}"').values[self.name] = value

    def __repr__(self) -> str:
        return f"ContextKey({self.name!r}, codec={'yes' if self.codec else 'no'})"
