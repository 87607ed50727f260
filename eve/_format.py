"""One way to say what was wrong with validated data, for every error message that needs it."""

from __future__ import annotations

from collections.abc import Iterable

import pydantic


def join_problems(problems: Iterable[tuple[Iterable[object], str]], *, top: str) -> str:
    """``a.b: message; c: message`` with ``top`` naming the whole value."""
    return "; ".join(f"{'.'.join(str(p) for p in path) or top}: {msg}" for path, msg in problems)


def pydantic_problems(error: pydantic.ValidationError, *, top: str) -> str:
    return join_problems(((item["loc"], item["msg"]) for item in error.errors()), top=top)
