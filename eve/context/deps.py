"""``current_deps()``: the running turn's deps, for code that has no ``ctx`` (a hook, a helper
a tool calls)."""

from __future__ import annotations

from typing import Any, TypeVar, overload

from eve.context.active import require_context
from eve.errors import DepsTypeMismatch

T = TypeVar("T")


@overload
def current_deps() -> Any: ...
@overload
def current_deps(kind: type[T]) -> T: ...
def current_deps(kind: type[T] | None = None) -> Any:
    """What ``define_agent(deps=factory)`` built for the running turn (None without a
    factory, or before the turn built it: in ``session.started`` and ``turn.started``).

    ``current_deps(Db)`` checks the object is a ``Db`` and is typed so: it raises
    ``DepsTypeMismatch`` otherwise. Raises ``NoActiveContext`` outside a turn.
    """
    deps = require_context("current_deps()").deps
    if kind is not None and not isinstance(deps, kind):
        raise DepsTypeMismatch(
            f"current_deps({kind.__name__}) found {type(deps).__name__}: the agent's deps "
            "factory builds another type (or none: define_agent(deps=...) is not set for "
            "this node or a caller)",
            expected=kind.__qualname__,
            actual=type(deps).__qualname__,
        )
    return deps
