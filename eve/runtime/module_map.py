"""Load the generated ``module_map.py`` without importing any authored module."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from eve.errors import ArtifactsMissing, StaleArtifacts

Loader = Callable[[], ModuleType]


@dataclass(kw_only=True)
class ModuleMap:
    """``nodes[node_id]["modules"][source_id]`` → loader, plus the fingerprint it was built for."""

    fingerprint: str
    schema_version: int
    nodes: dict[str, dict[str, dict[str, Loader]]]
    #: factory results, memoized per (node, source, export) for the life of this map
    factory_cache: dict[tuple[str, str, str], Any] = field(default_factory=dict)

    def loader(self, node_id: str, source_id: str) -> Loader | None:
        return self.nodes.get(node_id, {}).get("modules", {}).get(source_id)


def load_module_map(path: Path) -> ModuleMap:
    """Execute the generated file (it only defines loaders) and wrap what it defines."""
    if not path.is_file():
        raise ArtifactsMissing(f"{path} does not exist: run `eve compile`", path=str(path))
    spec = importlib.util.spec_from_file_location("_eve_compiled_module_map", path)
    if spec is None or spec.loader is None:
        raise ArtifactsMissing(f"{path} cannot be loaded: run `eve compile`", path=str(path))
    module = importlib.util.module_from_spec(spec)
    try:
        # compiled from the file as it is now, never from a cached .pyc: a .pyc is trusted
        # when the source's size and mtime (whole seconds) match, and a map rewritten within
        # the same second has the same size (its fingerprint is fixed-length), so the last
        # compile's map would load against this compile's manifest
        code = compile(path.read_bytes(), str(path), "exec")
        exec(code, module.__dict__)
        return ModuleMap(
            fingerprint=module.FINGERPRINT,
            schema_version=module.SCHEMA_VERSION,
            nodes=module.NODES,
        )
    except (AttributeError, SyntaxError, NameError) as error:
        raise StaleArtifacts(
            f"{path} is not a module map eve can read ({error}): run `eve compile`",
            path=str(path),
        ) from error
