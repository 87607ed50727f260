"""Collecting diagnostics: every finding has a code, a severity, a message and a source path."""

from __future__ import annotations

from eve.manifest import Diagnostic, Severity


class DiagnosticSink:
    """Accumulates diagnostics in the order they were found."""

    def __init__(self) -> None:
        self.items: list[Diagnostic] = []

    def add(
        self,
        severity: Severity,
        code: str,
        message: str,
        *,
        source_path: str | None = None,
        line: int | None = None,
        node_id: str | None = None,
    ) -> None:
        self.items.append(
            Diagnostic(
                code=code,
                severity=severity,
                message=message,
                source_path=source_path,
                line=line,
                node_id=node_id,
            )
        )

    def error(self, code: str, message: str, **where: str | int | None) -> None:
        self.add("error", code, message, **where)  # type: ignore[arg-type]

    def warning(self, code: str, message: str, **where: str | int | None) -> None:
        self.add("warning", code, message, **where)  # type: ignore[arg-type]

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.items)

    def count(self, severity: Severity) -> int:
        return sum(1 for d in self.items if d.severity == severity)


def format_diagnostic(diagnostic: Diagnostic) -> str:
    """``agent/tools/x.py:3: error: message [code]`` — the shape editors and CI logs link."""
    where = diagnostic.source_path or "agent"
    if diagnostic.line is not None:
        where = f"{where}:{diagnostic.line}"
    return f"{where}: {diagnostic.severity}: {diagnostic.message} [{diagnostic.code}]"
