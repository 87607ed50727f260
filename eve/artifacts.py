"""Are the artifacts fresh? Source fingerprints and the ``eve compile --check`` comparison.

This module sits beside the artifact contract (``eve.manifest``) because both sides use it:
the compiler records the hashes computed here, and the check (``eve compile --check``,
``eve run``'s "recompile if stale", ``eve info``) recomputes them. It reads files and package
metadata only, so it imports no authored code, no pydantic and no part of the compiler: a
server or CI job can ask "are these artifacts current?" without loading what compiles them.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import msgspec

from eve._version import __version__
from eve.manifest import (
    DISCOVERY_MANIFEST_PATH,
    METADATA_PATH,
    CompileMetadata,
    DiscoveryManifest,
    PluginDistribution,
    decode,
)

__all__ = ["CheckReport", "check_artifacts"]

#: the authored tree, relative to the app root
AGENT_DIR = "agent"
IGNORED_NAMES = frozenset({"__pycache__", "__tests__", "tests", ".DS_Store"})


def is_ignored(name: str) -> bool:
    """Caches, dotfiles and tests are never part of an agent (``name``: a file's last part)."""
    return (
        name in IGNORED_NAMES
        or name.startswith(".")
        or name.endswith((".pyc", ".pyo"))
        or (name.startswith("test_") and name.endswith(".py"))
        or name.endswith(("_test.py", ".test.py"))
    )


def digest(data: bytes) -> str:
    """The hash recorded for one source file or one artifact (hex sha256)."""
    return hashlib.sha256(data).hexdigest()


def hash_sources(app_root: Path) -> dict[str, str]:
    """``digest`` of every authored file under ``agent/``, by app-root-relative path; empty
    when there is no ``agent/`` (discovery reports that as an error of its own)."""
    out: dict[str, str] = {}
    stack = [AGENT_DIR] if (app_root / AGENT_DIR).is_dir() else []
    # os.scandir, plain strings and raw reads, not Path.iterdir and read_bytes: this walk is
    # most of what `eve compile --check` does, and on 1,000 tools they take half the time
    # (bench/startup.py times the whole command)
    while stack:
        rel_dir = stack.pop()
        with os.scandir(app_root / rel_dir) as entries:
            for entry in entries:
                if is_ignored(entry.name):
                    continue
                rel = f"{rel_dir}/{entry.name}"
                if entry.is_dir():
                    stack.append(rel)
                elif entry.is_file():
                    out[rel] = digest(_read_bytes(entry.path))
    return out


def source_changes(
    before: dict[str, str], now: dict[str, str]
) -> tuple[list[str], list[str], list[str]]:
    """The paths added, removed and changed between two ``hash_sources``, each sorted."""
    added = sorted(set(now) - set(before))
    removed = sorted(set(before) - set(now))
    changed = sorted(p for p in set(now) & set(before) if now[p] != before[p])
    return added, removed, changed


def _read_bytes(path: str) -> bytes:
    # a file object's buffering costs more than the read itself for a small source file
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


# A Struct rather than a dataclass: msgspec is loaded for the artifacts anyway, and
# ``dataclasses`` would be one more import on the path `eve compile --check` keeps short.
class CheckReport(msgspec.Struct, kw_only=True):
    """What differs between the artifacts and the sources; ``fresh`` when nothing does."""

    added: list[str] = []
    removed: list[str] = []
    changed: list[str] = []
    #: plugins compiled in that were upgraded, downgraded or uninstalled since
    plugins: list[str] = []
    #: problems with the artifacts themselves (missing, edited by hand, other eve version)
    problems: list[str] = []

    @property
    def fresh(self) -> bool:
        return not (self.added or self.removed or self.changed or self.plugins or self.problems)


def check_artifacts(app_root: Path | str) -> CheckReport:
    """Compare the recorded source hashes with the files on disk, and the artifacts' own.

    Plugins whose tool sets were compiled in are compared by their installed distribution's
    version (package metadata only, their code is not imported).
    """
    app_root = Path(app_root)
    report = CheckReport()
    metadata = _read(app_root, METADATA_PATH, CompileMetadata, report)
    recorded = _read(app_root, DISCOVERY_MANIFEST_PATH, DiscoveryManifest, report)
    if not isinstance(metadata, CompileMetadata) or not isinstance(recorded, DiscoveryManifest):
        return report
    if metadata.generator.version != __version__:
        report.problems.append(
            f"artifacts were written by eve {metadata.generator.version}, this is {__version__}"
        )
    _tampered(app_root, metadata, report)
    before = {source.path: source.sha256 for source in recorded.sources}
    report.added, report.removed, report.changed = source_changes(before, hash_sources(app_root))
    report.plugins = [m for p in metadata.plugins if (m := _plugin_moved(p)) is not None]
    return report


def _read(app_root: Path, rel: str, kind: type, report: CheckReport) -> object | None:
    path = app_root / rel
    try:
        return decode(path.read_bytes(), kind)
    except FileNotFoundError:
        report.problems.append(f"{rel} is missing")
    except (msgspec.ValidationError, msgspec.DecodeError) as error:
        report.problems.append(f"{rel} is unreadable ({error})")
    return None


def _tampered(app_root: Path, metadata: CompileMetadata, report: CheckReport) -> None:
    for rel, recorded in sorted(metadata.artifacts.items()):
        try:
            actual = digest((app_root / rel).read_bytes())
        except FileNotFoundError:
            report.problems.append(f"{rel} is missing")
            continue
        if actual != recorded:
            report.problems.append(f"{rel} was changed after it was compiled")


def _plugin_moved(plugin: PluginDistribution) -> str | None:
    # Imported here: package metadata is read only when a plugin was compiled in, and
    # ``importlib.metadata`` costs a few milliseconds of every ``--check`` otherwise.
    import importlib.metadata

    try:
        installed = importlib.metadata.version(plugin.distribution)
    except importlib.metadata.PackageNotFoundError:
        return f"{plugin.distribution} {plugin.version} (plugin {plugin.entry_point!r}) is gone"
    if installed == plugin.version:
        return None
    return (
        f"{plugin.distribution} (plugin {plugin.entry_point!r}) is {installed}, "
        f"compiled with {plugin.version}"
    )
