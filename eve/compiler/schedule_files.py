"""Discovery of ``agent/schedules/``: one schedule per ``.md`` or ``.py`` file, nested folders
naming them with ``/`` (``schedules/reports/daily.md`` is ``reports/daily``). Imports nothing."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from eve.artifacts import is_ignored
from eve.compiler.diagnostics import DiagnosticSink
from eve.manifest import ROOT_NODE_ID

#: one segment of a schedule's name: lower case, digits, ``_`` and ``-``
SCHEDULE_SEGMENT = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
SUFFIXES = (".md", ".py")


def walk_schedules(
    directory: Path, sink: DiagnosticSink, rel: Callable[[Path], str]
) -> list[tuple[str, str]]:
    """``(name, path)`` of every schedule under ``directory``, in name order; a file with
    a name that cannot be one, or a name two files share, is reported."""
    found: dict[str, str] = {}
    for entry in sorted(directory.rglob("*")):
        parts = entry.relative_to(directory).parts
        if any(is_ignored(part) for part in parts) or entry.is_dir():
            continue
        path = rel(entry)
        if entry.name == "__init__.py":
            continue
        if entry.suffix not in SUFFIXES:
            sink.warning(
                "discover/unknown-file",
                "schedules/ holds one schedule per .md file (cron: front matter, the prompt "
                "as its body) or .py file (define_schedule); this entry is ignored",
                source_path=path,
                node_id=ROOT_NODE_ID,
            )
            continue
        segments = [*parts[:-1], entry.stem]
        if not all(SCHEDULE_SEGMENT.match(s) and s.isascii() for s in segments):
            sink.error(
                "discover/schedule-name-invalid",
                f"schedule '{'/'.join(segments)}' must be lowercase letters, digits, '-' or '_' "
                "in each folder and file name: the path under schedules/ is the schedule's "
                "name (eve schedules run NAME)",
                source_path=path,
                node_id=ROOT_NODE_ID,
            )
            continue
        name = "/".join(segments)
        if name in found:
            sink.error(
                "discover/schedule-name-collision",
                f"{found[name]} and {path} both declare the schedule '{name}'; keep one",
                source_path=path,
                node_id=ROOT_NODE_ID,
            )
            continue
        found[name] = path
    return sorted(found.items())
