"""A mypy cache of a test's own, seeded from the project's (the one ``make lint`` fills).

mypy over eve with an empty cache reads the whole package and the libraries it imports
again: about 10 s of CPU for ``tests/execution/test_exhaustive.py``, against 3 s once its
cache holds them. ``make test`` runs ``make lint`` first, so in a fresh clone the project's
cache is new and the tests' are empty: seeding them with a copy of it skips that first read.
A copy, not links: mypy keeps its cache in SQLite files it writes in place, and a test's
run (shadowed sources, other files) must not change what the lint will read next.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

PROJECT_CACHE = Path(__file__).resolve().parent.parent / ".mypy_cache"


def seeded_cache(name: str) -> Path:
    """``.mypy_cache/<name>``: a cache for one test's runs, begun as a copy of the project's
    when it has none yet (the copy has options mypy checks per module, so a stale or
    different one only costs the time it would have taken anyway)."""
    cache = PROJECT_CACHE / name
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    source = PROJECT_CACHE / version
    if cache.exists() or not source.is_dir():
        return cache
    # copied aside and renamed into place: a worker that finds the directory finds it whole
    partial = PROJECT_CACHE / f".{name}-{os.getpid()}"
    shutil.copytree(source, partial / version)
    try:
        partial.rename(cache)
    except OSError:  # another worker seeded it first
        shutil.rmtree(partial)
    return cache
