"""The process-wide home of context keys and the active-context variable.

It lives in ``sys.modules`` under a fixed name rather than in this package, so two copies of
eve loaded under different module names (a vendored copy, a reloaded one) still share one
registry and one context variable; otherwise a key registered by one copy would be unknown to
the other and state would silently split.
"""

from __future__ import annotations

import contextvars
import sys
import types
from typing import Any

_HOME = "_eve_context_registry"


def _home() -> types.ModuleType:
    home = sys.modules.get(_HOME)
    if home is None:
        home = types.ModuleType(_HOME, "Shared by every copy of eve in this process.")
        setattr(home, "keys", {})  # noqa: B010 - a fresh module has no typed attributes
        setattr(home, "current", contextvars.ContextVar("eve_context", default=None))  # noqa: B010
        sys.modules[_HOME] = home
    return home


def registered_keys() -> dict[str, Any]:
    """name → the latest ContextKey registered under it (shared across eve copies)."""
    keys: dict[str, Any] = getattr(_home(), "keys")  # noqa: B009
    return keys


def current_context_var() -> contextvars.ContextVar[Any]:
    var: contextvars.ContextVar[Any] = getattr(_home(), "current")  # noqa: B009
    return var
