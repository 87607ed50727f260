"""One object per SQLite engine, made on first use: what a file's writers share in this
process (the connection groups run on, ``group_commit.py``; DBOS's combined writes,
``dbos_writes.py``), gone with its engine."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar
from weakref import WeakKeyDictionary

from sqlalchemy.engine import Engine

T = TypeVar("T")


class PerEngine(Generic[T]):
    """``make(engine)`` once per engine, however many threads ask at once."""

    def __init__(self, make: Callable[[Engine], T]) -> None:
        self._make = make
        self._made: WeakKeyDictionary[Engine, T] = WeakKeyDictionary()
        self._lock = threading.Lock()

    def __call__(self, engine: Engine) -> T:
        found = self._made.get(engine)
        if found is None:
            with self._lock:
                found = self._made.get(engine)
                if found is None:
                    found = self._made[engine] = self._make(engine)
        return found
