"""Rewrite the test modules' asserts once, in pytest-xdist's controller, before it starts
the workers.

pytest imports a test module through its assertion rewriter and caches the rewritten code
beside it (``__pycache__/<name>.<tag>-pytest-<version>.pyc``). With no cache yet (a fresh
clone, a changed test), the workers all start at once, none finds the cache, and every one
of them rewrites every module: measured on ``pytest --co`` of the whole suite, a process
collects on 6.3 s of CPU with no cache and 2.8 s with it, so six workers spent some 20 s of
CPU rewriting the same files. The controller collects nothing under xdist; rewriting here
(skipped for each module whose cache is current) leaves each worker a cache to read.
"""

from __future__ import annotations

import fnmatch
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# pytest's own rewriter and cache format, so a worker reads back exactly what it would have
# written itself (pinned: pytest>=8,<10)
from _pytest.assertion.rewrite import (
    PYC_TAIL,
    _read_pyc,
    _rewrite_test,
    _write_pyc,
    assertstate_key,
    get_cache_dir,
    try_makedirs,
)


def rewritten_files(config: pytest.Config) -> Iterator[Path]:
    """The files pytest rewrites under the run's arguments: those named like a test file
    (``python_files``) and every ``conftest.py``."""
    patterns = [*config.getini("python_files"), "conftest.py"]
    for argument in config.args:
        path = Path(config.invocation_params.dir, argument.split("::")[0])
        found = path.rglob("*.py") if path.is_dir() else [path] if path.suffix == ".py" else []
        for file in found:
            if "__pycache__" not in file.parts and any(
                fnmatch.fnmatch(file.name, pattern) for pattern in patterns
            ):
                yield file


def rewrite_ahead(config: pytest.Config) -> int:
    """Write the rewritten-code cache of each file whose cache is missing or stale; the
    number written."""
    state = config.stash[assertstate_key]
    written = 0
    for file in rewritten_files(config):
        cache_dir = get_cache_dir(file)
        pyc = cache_dir / (file.name[:-3] + PYC_TAIL)
        if _read_pyc(file, pyc) is not None or not try_makedirs(cache_dir):
            continue
        try:
            source_hash, code = _rewrite_test(file, config)
        except SyntaxError:
            continue  # the worker that imports it reports the error where it belongs
        written += _write_pyc(state, code, source_hash, pyc)
    return written


def should_rewrite_ahead(config: pytest.Config) -> bool:
    """Only in xdist's controller (it registers its ``dsession`` plugin there), with
    assertion rewriting on and bytecode written (the workers would not read it otherwise)."""
    return (
        config.pluginmanager.has_plugin("dsession")
        and config.getoption("assertmode") == "rewrite"
        and not sys.dont_write_bytecode
    )
