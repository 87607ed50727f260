"""Importing the eval files the compiled manifest declares: only ``eve eval`` does this."""

from __future__ import annotations

import importlib
import traceback
from collections.abc import Sequence
from pathlib import Path

from eve._authored import module_id_for
from eve.errors import EvalLoadError, EvalNotFound
from eve.evals.definition import EvalDefinition
from eve.evals.runner import LoadedEval
from eve.manifest import EvalDeclaration


def _line_in(error: BaseException, path: str) -> int | None:
    if isinstance(error, SyntaxError):
        return error.lineno
    frames = traceback.extract_tb(error.__traceback__)
    lines = [f.lineno for f in frames if Path(f.filename).as_posix().endswith(path)]
    return lines[-1] if lines else None


def _definition(module: object, path: str) -> EvalDefinition:
    default = getattr(module, "default", None)
    if isinstance(default, EvalDefinition):
        return default
    found = [v for v in vars(module).values() if isinstance(v, EvalDefinition)]
    if len(found) != 1:
        raise EvalLoadError(
            f"{path} defines {len(found)} evals at module level; it needs exactly one "
            "(default = define_eval(cases=[...]))",
            path=path,
        )
    return found[0]


def load_eval(declaration: EvalDeclaration) -> LoadedEval:
    """Import one eval file (the agent's imports must be prepared: resolving does that)."""
    path = declaration.logical_path
    try:
        module = importlib.import_module(module_id_for(path))
    except Exception as error:
        line = _line_in(error, path)
        where = f"{path}:{line}" if line else path
        raise EvalLoadError(
            f"importing {where} failed: {type(error).__name__}: {error}", path=path, line=line
        ) from error
    return LoadedEval(name=declaration.name, path=path, definition=_definition(module, path))


def select(declarations: Sequence[EvalDeclaration], names: Sequence[str]) -> list[EvalDeclaration]:
    """The evals ``names`` asks for (all when empty), in file order; ``EvalNotFound`` for a
    name no eval has."""
    known = [d.name for d in declarations]
    for name in names:
        if name not in known:
            listed = ", ".join(known) or "none: add agent/evals/<name>.py"
            raise EvalNotFound(f"no eval named {name!r} (evals: {listed})", name=name, known=known)
    return [d for d in declarations if not names or d.name in names]
