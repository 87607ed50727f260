"""A module map rewritten within the same second loads as it is now, not from a .pyc.

Python trusts a cached .pyc when the source's size and whole-second mtime match; a
recompile's map has the same size (its fingerprint is fixed-length), so ``eve dev``'s
reload right after a compile once read the previous map and refused the new manifest."""

from __future__ import annotations

import os
import py_compile
from pathlib import Path

from eve.runtime.module_map import load_module_map

MAP = 'FINGERPRINT = "sha256:{}"\nSCHEMA_VERSION = 13\nNODES = {{}}\n'


def test_a_map_rewritten_with_the_same_size_and_second_loads_its_new_fingerprint(
    tmp_path: Path,
) -> None:
    path = tmp_path / "module_map.py"
    path.write_text(MAP.format("a" * 64))
    stamp = path.stat().st_mtime_ns
    py_compile.compile(str(path))  # the cache a first import leaves
    assert load_module_map(path).fingerprint == "sha256:" + "a" * 64
    path.write_text(MAP.format("b" * 64))
    os.utime(path, ns=(stamp, stamp))  # the same second, the same size
    assert load_module_map(path).fingerprint == "sha256:" + "b" * 64
