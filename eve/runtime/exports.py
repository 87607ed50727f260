"""``load_resolved_module_export``: two-level lookup, export selection, factory materialization."""

from __future__ import annotations

import inspect
from typing import Any, Protocol, TypeVar

from eve.errors import InvalidModuleExport, MissingCompiledModuleNamespace
from eve.manifest import ROOT_NODE_ID
from eve.runtime.module_map import ModuleMap


async def load_resolved_module_export(
    module_map: ModuleMap,
    *,
    kind: str,
    source_id: str,
    logical_path: str,
    export_name: str = "default",
    factory: bool = False,
    node_id: str | None = None,
) -> Any:
    """The live value behind a manifest declaration.

    Looks up ``module_map.nodes[node_id or "__root__"]["modules"][source_id]``, imports the
    module, takes ``export_name`` and, for a factory, calls it once (awaiting it if async) and
    memoizes the result for the life of the module map.
    """
    node = node_id or ROOT_NODE_ID
    loader = module_map.loader(node, source_id)
    if loader is None:
        raise MissingCompiledModuleNamespace(
            kind=kind, source_id=source_id, logical_path=logical_path, node_id=node
        )
    cache_key = (node, source_id, export_name)
    if factory and cache_key in module_map.factory_cache:
        return module_map.factory_cache[cache_key]
    module = loader()
    if not hasattr(module, export_name):
        raise InvalidModuleExport(
            f"{logical_path} no longer has `{export_name}`: the artifacts are stale, "
            "run `eve compile`",
            source_id=source_id,
            logical_path=logical_path,
        )
    value = getattr(module, export_name)
    if factory:
        if not callable(value):
            raise InvalidModuleExport(
                f"{logical_path}: `{export_name}` was compiled as a factory but is not callable; "
                "run `eve compile`",
                source_id=source_id,
                logical_path=logical_path,
            )
        value = value()
        if inspect.isawaitable(value):
            value = await value
        module_map.factory_cache[cache_key] = value
    return value


class _Declared(Protocol):
    """What a manifest entry says about where its definition lives."""

    @property
    def source_id(self) -> str: ...
    @property
    def logical_path(self) -> str: ...
    @property
    def export_name(self) -> str: ...
    @property
    def factory(self) -> bool: ...


D = TypeVar("D")


async def load_definition(
    entry: _Declared,
    module_map: ModuleMap,
    node_id: str | None,
    *,
    kind: str,
    definition_type: type[D],
) -> D:
    """The live ``definition_type`` an entry of ``kind`` (``tool``, ``hook``) declares."""
    definition = await load_resolved_module_export(
        module_map,
        kind=kind,
        source_id=entry.source_id,
        logical_path=entry.logical_path,
        export_name=entry.export_name,
        factory=entry.factory,
        node_id=node_id,
    )
    if not isinstance(definition, definition_type):
        raise InvalidModuleExport(
            f"{entry.logical_path}: `{entry.export_name}` is {type(definition).__name__}, "
            f"not a {kind} definition: fix the module or run `eve compile`",
            source_id=entry.source_id,
            logical_path=entry.logical_path,
        )
    return definition
