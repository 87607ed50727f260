"""A write transaction's wall time on a thread that competes for the interpreter's lock:
SQLite's calls through the driver (which lets go of the lock around each) against the same
calls with the lock held (``eve/sessions/sqlite_held.py``).

One thread writes transactions like the writer lane's (``BEGIN IMMEDIATE``, ``STATEMENTS``
inserts of a few rows, ``COMMIT``) on a WAL file with the busy handler off, while
``SPINNERS`` threads run Python code, as a loaded worker's event loop and threads do; the
switch interval is eve's (1 ms). The two ways alternate by round; the result is each way's
median milliseconds a transaction and the spinners' work meanwhile (the held calls must
not starve them). Run with ``python -m bench.held_writes [--rounds N]``; prints JSON.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from eve.sessions.sqlite_held import HeldConnection, found_sqlite

SPINNERS = int(__import__("os").environ.get("HELD_SPINNERS", "4"))
STATEMENTS = 3
ROWS = 4
TRANSACTIONS = 300
Write = Callable[[sqlite3.Connection, int], None]
_SQL = "INSERT INTO t (session, idx, payload) VALUES " + ", ".join(["(?, ?, ?)"] * ROWS)


def _spin(stop: threading.Event, counts: list[int], slot: int) -> None:
    n = 0
    while not stop.is_set():
        sum(range(200))
        n += 1
    counts[slot] = n


def _parameters(transaction: int, statement: int) -> tuple[Any, ...]:
    values: list[Any] = []
    for row in range(ROWS):
        values += (f"s{statement}", transaction * ROWS + row, '{"kind": "text", "x": 1}')
    return tuple(values)


def _driver(connection: sqlite3.Connection, transaction: int) -> None:
    connection.execute("BEGIN IMMEDIATE")
    for statement in range(STATEMENTS):
        connection.execute(_SQL, _parameters(transaction, statement))
    connection.commit()


def _held(held: HeldConnection) -> Write:
    def write(connection: sqlite3.Connection, transaction: int) -> None:
        held.begin_immediate()
        for statement in range(STATEMENTS):
            held.run(_SQL, _parameters(transaction, statement))
        connection.commit()

    return write


def _round(
    connection: sqlite3.Connection, write: Callable[[sqlite3.Connection, int], None]
) -> dict[str, float]:
    connection.execute("DELETE FROM t")
    connection.commit()
    stop = threading.Event()
    counts = [0] * SPINNERS
    spinners = [threading.Thread(target=_spin, args=(stop, counts, i)) for i in range(SPINNERS)]
    for spinner in spinners:
        spinner.start()
    started = time.perf_counter()
    for transaction in range(TRANSACTIONS):
        write(connection, transaction)
    elapsed = time.perf_counter() - started
    stop.set()
    for spinner in spinners:
        spinner.join()
    return {"ms": elapsed / TRANSACTIONS * 1000, "spins_per_s": sum(counts) / elapsed}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=8)
    rounds = parser.parse_args().rounds
    sqlite = found_sqlite()
    assert sqlite is not None, "no shared libsqlite3 in this process"
    sys.setswitchinterval(0.001)
    with tempfile.TemporaryDirectory() as folder:
        connection = sqlite3.connect(Path(folder) / "held.db", isolation_level=None)
        for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "busy_timeout=0"):
            connection.execute(f"PRAGMA {pragma}")
        connection.execute("PRAGMA wal_autocheckpoint=0")
        connection.execute("CREATE TABLE t (session TEXT, idx INTEGER, payload TEXT)")
        handle = sqlite.handle(connection)
        assert handle is not None
        held = HeldConnection(sqlite, handle)
        ways = {"driver": _driver, "held": _held(held)}
        results: dict[str, list[dict[str, float]]] = {name: [] for name in ways}
        for _ in range(rounds):
            for name, write in ways.items():
                results[name].append(_round(connection, write))
        held.close()
        connection.close()
    summary = {
        name: {
            "ms_a_transaction": statistics.median(r["ms"] for r in runs),
            "spins_per_s": statistics.median(r["spins_per_s"] for r in runs),
        }
        for name, runs in results.items()
    }
    print(json.dumps({"rounds": rounds, "spinners": SPINNERS, **summary}, indent=2))


if __name__ == "__main__":
    main()
