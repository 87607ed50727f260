"""The compile cache: content-addressed results a compile can reuse, as imports reuse
``__pycache__``. It lives in ``.eve/cache/`` (never committed) and is only an accelerator:
a missing, stale or corrupt cache gives the same artifacts, just slower.

Two kinds of entries:

* source scans (imported names, module-state mutations), keyed by a file's path and bytes;
* JSON Schemas of pydantic models, keyed by everything pydantic's generator reads: the
  model's core schema and, for each class in it, its docstring and config. A core schema
  holding a function or an object without a stable ``repr`` yields a key that never repeats
  across processes, so such models are simply regenerated.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import msgspec
import pydantic

from eve._version import __version__
from eve.compiler.emit import write_atomically
from eve.compiler.mutation import Mutation

CACHE_PATH = ".eve/cache/compile-cache.json"
_STAMP = f"eve {__version__}; pydantic {pydantic.VERSION}"


class ScanEntry(msgspec.Struct, kw_only=True):
    names: list[str]
    mutations: list[tuple[str, int, str]]


class _CacheFile(msgspec.Struct, kw_only=True):
    stamp: str = ""
    scans: dict[str, ScanEntry] = {}
    schemas: dict[str, dict[str, Any]] = {}


def _classes(node: Any, found: list[type]) -> None:
    if isinstance(node, dict):
        cls = node.get("cls")
        if isinstance(cls, type):
            found.append(cls)
        for value in node.values():
            _classes(value, found)
    elif isinstance(node, list | tuple):
        for value in node:
            _classes(value, found)


# pydantic's refs end in the class's id() ("pkg.mod.Input:140031…"), different every process.
_REF_ID = re.compile(r"(\w):\d+'")


def schema_key(model: type[pydantic.BaseModel]) -> str:
    core = model.__pydantic_core_schema__
    classes: list[type] = []
    _classes(core, classes)
    facts = [(c.__qualname__, c.__doc__, repr(getattr(c, "model_config", None))) for c in classes]
    stable = _REF_ID.sub(r"\1'", repr((core, facts)))
    return hashlib.sha256(stable.encode()).hexdigest()


class CompileCache:
    """Reads and records entries; ``save`` keeps only what this compile used."""

    def __init__(self, data: _CacheFile | None = None) -> None:
        self._old = data if data is not None and data.stamp == _STAMP else _CacheFile()
        self._new = _CacheFile(stamp=_STAMP)

    @classmethod
    def load(cls, app_root: Path) -> CompileCache:
        try:
            return cls(msgspec.json.decode((app_root / CACHE_PATH).read_bytes(), type=_CacheFile))
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            return cls()

    def save(self, app_root: Path) -> None:
        write_atomically(app_root / CACHE_PATH, msgspec.json.encode(self._new))

    def scan(self, path: str, source: bytes) -> tuple[list[str], list[Mutation]] | None:
        key = f"{path}:{hashlib.sha256(source).hexdigest()}"
        entry = self._old.scans.get(key) or self._new.scans.get(key)
        if entry is None:
            return None
        self._new.scans[key] = entry
        return entry.names, [
            Mutation(name=n, line=line, how=how) for n, line, how in entry.mutations
        ]

    def record_scan(
        self, path: str, source: bytes, names: list[str], mutations: list[Mutation]
    ) -> None:
        key = f"{path}:{hashlib.sha256(source).hexdigest()}"
        self._new.scans[key] = ScanEntry(
            names=names, mutations=[(m.name, m.line, m.how) for m in mutations]
        )

    def json_schema(self, model: type[pydantic.BaseModel]) -> dict[str, Any]:
        key = schema_key(model)
        schema = self._old.schemas.get(key) or self._new.schemas.get(key)
        if schema is None:
            schema = model.model_json_schema()
        self._new.schemas[key] = schema
        return schema
