"""Reading ``agent/evals/<name>.py`` as a syntax tree: the declarations, never an import.

An eval file imports the agent's tools and lib to stub and check them; compiling must not run
it (only ``eve eval`` does), so the compiler records what the file declares from its text:
the ``define_eval(...)`` call, its literal ``model=``, and each ``Case("name", ...)``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from eve.compiler.diagnostics import DiagnosticSink
from eve.manifest import EvalCaseDeclaration, EvalDeclaration


def _called(node: ast.Call, name: str) -> bool:
    func = node.func
    return (isinstance(func, ast.Name) and func.id == name) or (
        isinstance(func, ast.Attribute) and func.attr == name
    )


def _argument(node: ast.Call, keyword: str, position: int) -> ast.expr | None:
    for given in node.keywords:
        if given.arg == keyword:
            return given.value
    return node.args[position] if len(node.args) > position else None


def _literal(value: ast.expr | None) -> str | None:
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return value.value
    return None


class _EvalReader:
    def __init__(self, sink: DiagnosticSink, path: str) -> None:
        self.sink = sink
        self.path = path

    def error(self, code: str, message: str, line: int | None) -> None:
        self.sink.error(code, message, source_path=self.path, line=line)

    def read(self, name: str, text: str) -> EvalDeclaration | None:
        try:
            tree = ast.parse(text, filename=self.path)
        except SyntaxError as error:
            self.error("compile/eval-syntax-invalid", f"{error.msg}", error.lineno)
            return None
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
        defined = sorted((c for c in calls if _called(c, "define_eval")), key=lambda c: c.lineno)
        if not defined:
            self.error(
                "compile/eval-definition-missing",
                f"{self.path} has no define_eval(cases=[...]) call: an eval file defines one "
                "eval (from eve.evals import define_eval, Case)",
                None,
            )
            return None
        if len(defined) > 1:
            self.error(
                "compile/eval-definition-duplicate",
                f"{self.path} calls define_eval {len(defined)} times; one eval per file (the "
                "file name is its name): move the others to files of their own",
                defined[1].lineno,
            )
            return None
        cases = self.cases(sorted((c for c in calls if _called(c, "Case")), key=_position))
        if cases is None:
            return None
        if not cases:
            self.error(
                "compile/eval-cases-missing",
                "define_eval has no Case(...): give it cases=[Case('name', 'a message', ...)]",
                defined[0].lineno,
            )
            return None
        return EvalDeclaration(
            name=name,
            logical_path=self.path,
            line=defined[0].lineno,
            model=_literal(_argument(defined[0], "model", 99)),
            cases=cases,
        )

    def cases(self, calls: list[ast.Call]) -> list[EvalCaseDeclaration] | None:
        cases: list[EvalCaseDeclaration] = []
        seen: dict[str, int] = {}
        for call in calls:
            name = _literal(_argument(call, "name", 0))
            if name is None or not name.strip():
                self.error(
                    "compile/eval-case-name-invalid",
                    "a Case's name (its first argument) must be a non-empty string literal, so "
                    "eve compile can list the cases without running the file",
                    call.lineno,
                )
                return None
            if name in seen:
                self.error(
                    "compile/eval-case-duplicate",
                    f"two cases are named {name!r} (lines {seen[name]} and {call.lineno}); "
                    "results are reported by case name, so rename one",
                    call.lineno,
                )
                return None
            seen[name] = call.lineno
            cases.append(EvalCaseDeclaration(name=name, line=call.lineno))
        return cases


def _position(call: ast.Call) -> tuple[int, int]:
    return (call.lineno, call.col_offset)


def read_evals(
    app_root: Path, files: list[tuple[str, str]], sink: DiagnosticSink
) -> list[EvalDeclaration]:
    """The declaration of each ``(name, path)`` eval file; problems go to ``sink``."""
    found = []
    for name, path in files:
        try:
            text = (app_root / path).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            sink.error("compile/eval-syntax-invalid", "not UTF-8 text", source_path=path)
            continue
        declaration = _EvalReader(sink, path).read(name, text)
        if declaration is not None:
            found.append(declaration)
    return found
