"""``load_compiled_agent``: read both artifacts from ``.eve/compile/`` and check they match."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import msgspec

from eve._authored import prepare_authored_imports
from eve.errors import ArtifactsMissing, ManifestVersionError, StaleArtifacts
from eve.manifest import MANIFEST_PATH, MODULE_MAP_PATH, SCHEMA_VERSION, CompiledManifest, decode
from eve.runtime.module_map import ModuleMap, load_module_map
from eve.runtime.resolve_agent import check_artifacts_match


@dataclass(frozen=True, kw_only=True)
class CompiledAgent:
    app_root: Path
    manifest: CompiledManifest
    module_map: ModuleMap


class _Versioned(msgspec.Struct):
    kind: str = ""
    schema_version: int = 0


def read_manifest(path: Path) -> CompiledManifest:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ArtifactsMissing(
            f"no compiled agent at {path}: run `eve compile`", path=str(path)
        ) from None
    try:
        head = msgspec.json.decode(data, type=_Versioned)
    except msgspec.DecodeError as error:
        raise StaleArtifacts(f"{path} is not JSON ({error}): run `eve compile`") from error
    if head.schema_version != SCHEMA_VERSION:
        raise ManifestVersionError(
            f"{path} has schema version {head.schema_version}, this eve reads "
            f"{SCHEMA_VERSION}: run `eve compile` with this eve",
            found=head.schema_version,
            expected=SCHEMA_VERSION,
        )
    try:
        return decode(data, CompiledManifest)
    except msgspec.ValidationError as error:
        raise StaleArtifacts(f"{path} is not a valid manifest: {error}") from error


def load_compiled_agent(app_root: Path | str) -> CompiledAgent:
    """Read the compiled manifest and module map of the app at ``app_root``.

    Raises ``ArtifactsMissing`` when nothing was compiled and ``StaleArtifacts`` when the two
    files come from different compiles, before any authored code is imported.
    """
    root = Path(app_root)
    manifest = read_manifest(root / MANIFEST_PATH)
    module_map = load_module_map(root / MODULE_MAP_PATH)
    check_artifacts_match(manifest, module_map)
    prepare_authored_imports(root)
    return CompiledAgent(app_root=root, manifest=manifest, module_map=module_map)
