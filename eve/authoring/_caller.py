"""Which module a ``define_*`` call was written in."""

from __future__ import annotations

import sys


def caller_module(depth: int = 2) -> str | None:
    """``__name__`` of the module ``depth`` frames up (2: the caller of the ``define_*``)."""
    name = sys._getframe(depth).f_globals.get("__name__")
    return name if isinstance(name, str) else None
