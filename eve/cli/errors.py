"""Turn an ``EveError`` into one ``eve: …`` line and its exit code: the CLI's only translator."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

from eve._redact import redact
from eve.errors import EveError

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str, code: int = 1) -> None:
    click.echo(f"eve: {redact(message)}", err=True)
    raise SystemExit(code)


def translate_errors(fn: F) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except EveError as error:
            fail(str(error), error.exit_code)

    return wrapper  # type: ignore[return-value]
