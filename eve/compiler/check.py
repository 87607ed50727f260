"""``eve compile --check``: are the artifacts fresh? Rediscovers and rehashes; imports nothing.

Plugins whose tool sets were compiled in are compared by their installed distribution's
version (package metadata only, their code is not imported).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from eve._version import __version__
from eve.compiler.diagnostics import DiagnosticSink
from eve.compiler.discover import discover
from eve.manifest import (
    DISCOVERY_MANIFEST_PATH,
    METADATA_PATH,
    CompileMetadata,
    DiscoveryManifest,
    PluginDistribution,
    decode,
)


@dataclass(kw_only=True)
class CheckReport:
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    #: plugins compiled in that were upgraded, downgraded or uninstalled since
    plugins: list[str] = field(default_factory=list)
    #: problems with the artifacts themselves (missing, edited by hand, other eve version)
    problems: list[str] = field(default_factory=list)

    @property
    def fresh(self) -> bool:
        return not (self.added or self.removed or self.changed or self.plugins or self.problems)


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
    for rel, digest in sorted(metadata.artifacts.items()):
        try:
            actual = hashlib.sha256((app_root / rel).read_bytes()).hexdigest()
        except FileNotFoundError:
            report.problems.append(f"{rel} is missing")
            continue
        if actual != digest:
            report.problems.append(f"{rel} was changed after it was compiled")


def check_artifacts(app_root: Path | str) -> CheckReport:
    """Compare the recorded source hashes with the files on disk, and the artifacts' own."""
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
    current = discover(app_root, DiagnosticSink()).sources
    before = {source.path: source.sha256 for source in recorded.sources}
    report.added = sorted(set(current) - set(before))
    report.removed = sorted(set(before) - set(current))
    report.changed = sorted(p for p in set(current) & set(before) if current[p] != before[p])
    report.plugins = [m for p in metadata.plugins if (m := _plugin_moved(p)) is not None]
    return report


def _plugin_moved(plugin: PluginDistribution) -> str | None:
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
