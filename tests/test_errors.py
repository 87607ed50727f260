"""The one error tree: the docstring's drawing matches the classes (docs/errors.md is checked
by tests/test_docs.py), no module grows its own, and every error pickles its fields."""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil
import re
import types
from typing import Any, get_args, get_origin, get_type_hints

import pytest

import eve
import eve.errors
import eve.manifest
from eve.errors import EveError

#: a drawn line: the tree's bars, then a class name
_DRAWN = re.compile(r"^(?P<bars>[│├└─ ]*)(?P<name>[A-Z]\w+)")


def _classes() -> dict[str, type[EveError]]:
    found = {
        name: value
        for name, value in vars(eve.errors).items()
        if isinstance(value, type) and issubclass(value, EveError)
    }
    return found


def _parents() -> dict[str, str | None]:
    """Each class's parent in the tree: its nearest base that is an eve error."""
    parents: dict[str, str | None] = {}
    for name, cls in _classes().items():
        bases = [b for b in cls.__bases__ if issubclass(b, EveError)]
        parents[name] = bases[0].__name__ if bases else None
    return parents


def _drawn(text: str) -> dict[str, str | None]:
    """``{class: parent}`` read off a box drawing: a name's parent is the last name drawn
    with less indentation."""
    stack: list[tuple[int, str]] = []
    parents: dict[str, str | None] = {}
    for line in text.splitlines():
        match = _DRAWN.match(line)
        if match is None:
            continue
        depth = len(match["bars"])
        while stack and stack[-1][0] >= depth:
            stack.pop()
        name = match["name"]
        assert name not in parents, f"{name} is drawn twice"
        parents[name] = stack[-1][1] if stack else None
        stack.append((depth, name))
    return parents


def _docstring_tree() -> str:
    doc = eve.errors.__doc__ or ""
    start = doc.index("    EveError\n")
    end = doc.index("\n\n", start)
    return "\n".join(line.removeprefix("    ") for line in doc[start:end].splitlines())


def _import_all() -> list[types.ModuleType]:
    """Every module of the package (``eve.__main__`` runs the CLI, so not that one)."""
    names = [m.name for m in pkgutil.walk_packages(eve.__path__, "eve.")]
    return [importlib.import_module(n) for n in names if n != "eve.__main__"]


def test_every_eve_error_is_defined_in_eve_errors() -> None:
    """One tree: no module grows an error class of its own (import them all, then look)."""
    _import_all()
    strays: list[str] = []
    pending = list(EveError.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls.__module__ != "eve.errors":
            strays.append(f"{cls.__module__}.{cls.__qualname__}")
    assert strays == []


def test_no_other_exception_tree_in_the_server() -> None:
    """The server's refusals are eve errors: no module of the package defines an exception
    class outside the tree but for internal control flow the loop never lets out."""
    allowed = {"eve.execution.turn_io.Cancelled", "eve.compiler.load.LoadFailure"}
    allowed |= {"eve._frontmatter.FrontMatterError"}
    # rolls back a turn claim that found its Idempotency-Key answered; the service catches it
    allowed |= {"eve.sessions.idempotency.Replayed"}
    # eve dev's Ctrl-C at its prompt, turned into a cancel where it is caught (dev_command)
    allowed |= {"eve.cli.dev_command._CtrlCKey"}
    # a call's session ended under it: the pool renews the session and decides on a resend
    allowed |= {"eve.connections.pool._SessionEnded"}
    # a message's claim on the loop on PostgreSQL: not sent, refused (claimed in a thread
    # instead) or lost (DatabaseUnavailable), all caught in PgLoopClaims.claim
    allowed |= {"eve.sessions.pg_claim_now._NotSent"}
    allowed |= {"eve.sessions.pg_libpq.QueryRefused", "eve.sessions.pg_libpq.QueryLost"}
    found = {
        f"{loaded.__name__}.{value.__qualname__}"
        for loaded in _import_all()
        for value in vars(loaded).values()
        if isinstance(value, type)
        and issubclass(value, BaseException)
        and value.__module__ == loaded.__name__
        and not issubclass(value, EveError)
    }
    assert found <= allowed


def _sample(annotation: Any) -> Any:
    """A value of the annotated type, distinct enough to notice if it is lost."""
    if isinstance(annotation, types.UnionType) or get_origin(annotation) is not None:
        if get_origin(annotation) is list:
            return [_sample(get_args(annotation)[0])]
        options = [a for a in get_args(annotation) if a is not type(None)]
        return _sample(options[0])
    if annotation is int:
        return 7
    if annotation is float:
        return 2.5
    if annotation is str:
        return "sample"
    if annotation is eve.manifest.Diagnostic:
        return eve.manifest.Diagnostic(
            code="discover/x", severity="error", message="m", source_path="agent/x.py"
        )
    raise AssertionError(f"no sample for {annotation!r}: teach _sample this type")


@pytest.mark.parametrize("name", sorted(_classes()))
def test_each_error_pickles_with_its_fields(name: str) -> None:
    cls = _classes()[name]
    hints = get_type_hints(cls.__init__, {**vars(eve.errors), **vars(eve.manifest)})
    params = inspect.signature(cls.__init__).parameters
    fields = {
        key: _sample(hints[key])
        for key, param in params.items()
        if param.kind is inspect.Parameter.KEYWORD_ONLY
    }
    error = cls("what went wrong", **fields) if "message" in params else cls(**fields)
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is cls
    assert str(copy) == str(error)
    assert vars(copy) == vars(error)
    for key, value in fields.items():
        assert getattr(copy, key) == value


def test_a_field_the_class_does_not_declare_is_refused() -> None:
    with pytest.raises(TypeError):
        eve.errors.SessionNotFound("gone", session_id="s", reason="x")  # type: ignore[call-arg]
