"""The measuring side of ``bench.storage_growth``: one session of many short turns, one process.

``python bench/_storage_worker.py --turns 1000 --at 5,10,90,100 --out FILE`` runs a durable
session of ``--turns`` short turns on ``offline/test`` through the in-process session
service (no HTTP) and writes, after each turn named in ``--at``, the bytes the session
database holds, per table, as JSON. PostgreSQL comes in through ``EVE_DATABASE_URL``;
without it the service uses its embedded SQLite files under a temporary app root.

It imports nothing from ``bench`` and only long-standing eve names, and runs as a script
(not ``-m``), so ``PYTHONPATH`` can put another checkout's ``eve`` first: that is how the
parent measures the baseline, the eve before versioned checkpoints, the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sqlite3
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: the words user messages are drawn from: short messages as in a chat, varied enough
#: that PostgreSQL's compression of long values does not hide what is stored
WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "romeo",
    "sierra",
    "tango",
    "uniform",
    "victor",
    "whiskey",
    "xray",
    "yankee",
    "zulu",
    "amber",
    "basil",
    "cedar",
    "dune",
    "ember",
    "fjord",
    "glade",
    "harbor",
    "inlet",
    "jasper",
    "knoll",
    "lagoon",
    "meadow",
]


def user_text(turn: int) -> str:
    """Turn ``turn``'s message: about 100 characters, the same in every run."""
    pick = random.Random(turn)
    return f"message {turn}: " + " ".join(pick.choice(WORDS) for _ in range(14))


def _setup(workspace: Path) -> Any:
    from eve.execution.setup import AgentSetup
    from eve.manifest import AgentConfig
    from eve.models.offline import OfflineTestModel
    from eve.runtime import ResolvedAgent

    agent = ResolvedAgent(
        node_id="__root__", config=AgentConfig(), instructions="Answer briefly.", tools=[]
    )
    return AgentSetup(
        agent=agent,
        client=OfflineTestModel(),
        workspace=workspace,
        app_root=workspace,
        fingerprint="bench-storage-growth",
    )


# --- bytes held -------------------------------------------------------------------------


def _sqlite_bytes(url: str) -> dict[str, int]:
    """The pages of each table (its indexes included) of one SQLite file, after a WAL
    checkpoint; ``_file`` is the file and its WAL as they lie on disk, free pages and all."""
    path = url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        rows = c.execute(
            "SELECT coalesce(m.tbl_name, s.name), sum(s.pgsize) FROM dbstat s "
            "LEFT JOIN sqlite_master m ON m.name = s.name GROUP BY 1"
        ).fetchall()
    sizes = {str(name): int(size) for name, size in rows}
    wal = Path(path + "-wal")
    sizes["_file"] = Path(path).stat().st_size + (wal.stat().st_size if wal.exists() else 0)
    return sizes


def _postgres_bytes(url: str) -> dict[str, int]:
    """``pg_total_relation_size`` (heap, TOAST, indexes) of every table after ``VACUUM
    FULL``: the live rows, packed, so when autovacuum last ran does not move the figure."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as c:
        c.execute("VACUUM FULL")
        rows = c.execute(
            "SELECT n.nspname || '.' || c.relname, pg_total_relation_size(c.oid) "
            "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema')"
        ).fetchall()
    return {str(name): int(size) for name, size in rows}


def measure(settings: Any) -> dict[str, dict[str, int]]:
    """``{"dbos": {table: bytes}, "eve": {...}}``: DBOS's system database and eve's tables."""
    if settings.is_postgres:
        everything = _postgres_bytes(settings.system_url)
        dbos = {k: v for k, v in everything.items() if k.startswith("dbos.")}
        eve = {k: v for k, v in everything.items() if k not in dbos}
        return {"dbos": dbos, "eve": eve}
    return {"dbos": _sqlite_bytes(settings.system_url), "eve": _sqlite_bytes(settings.eve_url)}


# --- the session ------------------------------------------------------------------------


async def _until_waiting(service: Any, session_id: str, start: int) -> int:
    """Follow the log from ``start`` to the turn's ``session.waiting``; the next index."""
    index = start
    lines = await service.events(session_id, start, follow=True)
    try:
        async for line in lines:
            if not line:
                continue
            index += 1
            kind = json.loads(line)["type"]
            if kind == "turn.failed":
                raise AssertionError(f"turn failed: {line}")
            if kind == "session.waiting":
                return index
    finally:
        await lines.aclose()  # type: ignore[attr-defined]
    raise AssertionError("the log ended before the turn did")


async def _settled(service: Any, session_id: str) -> None:
    """Until DBOS has recorded the turn's end (its status row is written after the body)."""
    for _ in range(400):
        if not await service.engine.active_turns(session_id):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the turn's workflow never finished")


async def run(
    turns: int, at: set[int], app_root: Path, env: Mapping[str, str] = os.environ
) -> dict[str, Any]:
    """``turns`` turns of one session; the bytes held after each turn in ``at``. The
    database is ``env``'s ``EVE_DATABASE_URL``, else SQLite under ``app_root``."""
    from eve.sessions import SessionService, resolve_settings

    settings = resolve_settings(app_root, env=env, executor_id="bench-storage")
    service = SessionService(_setup(app_root), settings)
    await service.start()
    sizes: dict[str, Any] = {}
    started = time.perf_counter()
    try:
        accepted = await service.create(user_text(0))
        session_id = accepted.session_id
        index = await _until_waiting(service, session_id, 0)
        for turn in range(1, turns + 1):
            if turn > 1:
                await service.send(session_id, user_text(turn - 1))
                index = await _until_waiting(service, session_id, index)
            if turn in at:
                await _settled(service, session_id)
                sizes[str(turn)] = await asyncio.to_thread(measure, settings)
        summary = await service.summary(session_id)
    finally:
        await service.stop()
    return {
        "database": "postgresql" if settings.is_postgres else "sqlite",
        "turns": turns,
        "turns_counted": summary.turns,
        "seconds": round(time.perf_counter() - started, 1),
        "sizes": sizes,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, required=True)
    parser.add_argument("--at", required=True, help="comma-separated turns to measure after")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    at = {int(t) for t in args.at.split(",")}
    with tempfile.TemporaryDirectory(prefix="eve-bench-storage-") as tmp:
        result = asyncio.run(run(args.turns, at, Path(tmp)))
    args.out.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
