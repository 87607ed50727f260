"""Measure memory search ([memory](../docs/memory.md)): how often it finds the right entry
on a small labelled set, and what a query costs once a scope holds 10,000 and 100,000
entries.

**Recall.** 30 facts about a shop's customers and 24 questions, each labelled with the one
fact that answers it; half the questions share a word with their fact, half paraphrase it
("a hot drink" for "espresso"). recall@k: the share of questions whose fact is among the
first k results, for keyword search (SQLite FTS5) and semantic search (WordLlama, a KNN
query by cosine on sqlite-vec's ``vec0``), both through ``DatabaseMemory`` on a real SQLite
file; then on PostgreSQL: keyword (``ts_rank``), semantic with pgvector (pgserver's
PostgreSQL 16) and semantic ranked in process (Debian's PostgreSQL, which has no pgvector).

**Latency.** One scope (the worst case: an ``agent`` scope everyone writes to) filled with
10,000 and 100,000 generated entries, written in one transaction each (the FTS triggers and
the ``vec0`` rows included); then the median and 95th percentile of 40 queries of 5 results,
each search as ``eve__memory_search`` runs it. On PostgreSQL the same entries are written as
an earlier eve wrote them (vectors as blobs, no stored ``text_search`` column, batches of
5,000); a store's first call adds the column and its GIN index (timed: the keyword upgrade);
on the pgvector server the store's first semantic call moves the blobs into
``eve_memories_vec`` (timed: the upgrade), on the other the first search reads them into the
process's cache (timed: ``first``). The servers
are the test suite's throwaway ones (``tests/postgres.py``); without one that part is skipped,
saying why. Run alone with ``python -m bench.memory_search [--quick]``; results land in
``bench/results/memory_search.{json,md}``.
"""

from __future__ import annotations

import contextlib
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from bench._machine import machine_info, package_version
from bench._results import publish
from eve.auth.principal import PrincipalRef
from eve.memory import embedding, pgvector, vectors
from eve.memory.records import MemoryKey, NewEntry, SlotKey, Writer
from eve.memory.sql import DatabaseMemory, memory_engine
from eve.memory.tables import SEARCH_COLUMN, create_memory_tables, memories
from tests.postgres import PostgresServer, PostgresUnavailable, find_bindir, pgserver_bindir

NAME = "memory_search"
SIZES, QUICK_SIZES = (10_000, 100_000), (1_000,)
QUERIES, QUICK_QUERIES = 40, 5
#: the PostgreSQL servers, by how they search by meaning
PGVECTOR, IN_PROCESS = "pgvector", "in process"
#: entries per transaction when filling PostgreSQL
PG_BATCH = 5_000
#: PostgreSQL: what makes today's table the one an eve before the stored ``text_search``
#: column made (a GIN index over the expression; the column's own index goes with it)
EARLIER_KEYWORD_SCHEMA = [
    f"ALTER TABLE {memories.name} DROP COLUMN {SEARCH_COLUMN}",
    "CREATE INDEX eve_memories_text ON eve_memories USING GIN (to_tsvector('english', text))",
]
KEY = MemoryKey(
    slot=SlotKey(namespace="bench", node_id="__root__", slot="memory", scope="agent"), owner=""
)
WRITER = Writer(principal=PrincipalRef(id="bench", kind="operator"), session_id="ses_bench")

#: (id, fact)
FACTS = [
    ("f01", "Ann drinks a double espresso every morning before work"),
    ("f02", "Ben is allergic to peanuts and all tree nuts"),
    ("f03", "Cara's order 1042 arrived with a cracked screen"),
    ("f04", "Dev prefers deliveries on Friday afternoons"),
    ("f05", "Eli pays by bank transfer, never by card"),
    ("f06", "Fay's daughter starts university in Leeds in September"),
    ("f07", "Gus runs a bakery and orders flour by the pallet"),
    ("f08", "Hana asked to be called by her first name only"),
    ("f09", "Ivo's dog is a three-year-old border collie named Pip"),
    ("f10", "Jo wants invoices sent to the accounts team, not to her"),
    ("f11", "Kai returned the blue jacket because the sleeves were too short"),
    ("f12", "Lea is vegetarian and avoids gelatine"),
    ("f13", "Max moved from Bristol to Glasgow last spring"),
    ("f14", "Nia collects vintage fountain pens"),
    ("f15", "Oli's warehouse is closed on Mondays"),
    ("f16", "Pam reads mostly crime novels and historical fiction"),
    ("f17", "Quin's company has a purchase limit of 5000 pounds without sign-off"),
    ("f18", "Rae plays cello in a string quartet on weekends"),
    ("f19", "Sam is training for the Berlin marathon"),
    ("f20", "Tia's printer only takes the XL black ink cartridges"),
    ("f21", "Uma speaks Portuguese at home and prefers emails in English"),
    ("f22", "Vic drives an electric van for his flower deliveries"),
    ("f23", "Wyn complained twice about late parcels in December"),
    ("f24", "Xan is colour blind, so product photos should name the colours"),
    ("f25", "Yui keeps bees and sells honey at the Saturday market"),
    ("f26", "Zed's birthday is on the fourteenth of March"),
    ("f27", "Ada works night shifts at the hospital and sleeps until noon"),
    ("f28", "Bo wants gift wrapping on every order"),
    ("f29", "Cy lost the receipt for the drill he wants to return"),
    ("f30", "Di's kitchen is being renovated until the end of June"),
]
#: (question, the fact that answers it); the first 12 share a word with it, the rest do not
QUESTIONS = [
    ("How does Ann take her espresso?", "f01"),
    ("Which nuts is Ben allergic to?", "f02"),
    ("What was wrong with order 1042?", "f03"),
    ("When should deliveries to Dev arrive?", "f04"),
    ("How does Eli pay?", "f05"),
    ("Where is Fay's daughter going to university?", "f06"),
    ("How much flour does Gus order?", "f07"),
    ("What is Ivo's dog called?", "f09"),
    ("Who gets Jo's invoices?", "f10"),
    ("Why did Kai return the jacket?", "f11"),
    ("Which city did Max move to?", "f13"),
    ("Which day is Oli's warehouse closed?", "f15"),
    ("What hot drink does someone have at breakfast?", "f01"),
    ("Who has a food allergy?", "f02"),
    ("Which customer eats no meat?", "f12"),
    ("Who likes old writing instruments?", "f14"),
    ("What books does Pam enjoy?", "f16"),
    ("Who plays a musical instrument?", "f18"),
    ("Who is preparing for a long running race?", "f19"),
    ("Which customer has insects as a hobby?", "f25"),
    ("Who cannot tell colours apart?", "f24"),
    ("What cartridges fit Tia's machine?", "f20"),
    ("Whose vehicle runs on a battery?", "f22"),
    ("Who works at night?", "f27"),
]

_WORDS = [
    "order",
    "parcel",
    "delivery",
    "invoice",
    "refund",
    "jacket",
    "shoes",
    "lamp",
    "table",
    "chair",
    "paint",
    "brush",
    "garden",
    "hose",
    "kettle",
    "toaster",
    "blender",
    "coffee",
    "tea",
    "sugar",
    "flour",
    "bread",
    "cheese",
    "apples",
    "bicycle",
    "helmet",
    "tent",
    "lantern",
    "rope",
    "drill",
    "saw",
    "hammer",
    "nails",
    "screws",
    "glue",
    "tape",
    "paper",
    "pens",
    "ink",
    "printer",
    "cable",
    "phone",
    "charger",
    "laptop",
    "monitor",
    "keyboard",
    "mouse",
    "speaker",
    "camera",
    "lens",
    "tripod",
    "book",
    "novel",
    "map",
]
_NAMES = [
    "Ann",
    "Ben",
    "Cara",
    "Dev",
    "Eli",
    "Fay",
    "Gus",
    "Hana",
    "Ivo",
    "Jo",
    "Kai",
    "Lea",
    "Max",
    "Nia",
    "Oli",
    "Pam",
]


def _store(path: Path) -> DatabaseMemory:
    return DatabaseMemory(memory_engine(f"sqlite:///{path}"))


def recall_at(store: DatabaseMemory, *, semantic: bool) -> dict[str, float]:
    found: dict[int, int] = {1: 0, 3: 0, 5: 0}
    for question, answer in QUESTIONS:
        ids = [h.record.id for h in store.search(KEY, question, limit=5, semantic=semantic)]
        for k in found:
            found[k] += answer in ids[:k]
    return {f"recall@{k}": round(n / len(QUESTIONS), 3) for k, n in found.items()}


def _recall_row(store: DatabaseMemory, *, semantic: bool) -> dict[str, float]:
    row = recall_at(store, semantic=semantic)
    worded, paraphrased = QUESTIONS[:12], QUESTIONS[12:]
    for part, questions in (("sharing a word", worded), ("paraphrased", paraphrased)):
        hits = sum(
            answer in [h.record.id for h in store.search(KEY, q, limit=3, semantic=semantic)]
            for q, answer in questions
        )
        row[f"recall@3 {part}"] = round(hits / len(questions), 3)
    return row


def _with_facts(store: DatabaseMemory) -> DatabaseMemory:
    for id, text in FACTS:
        store.save(KEY, NewEntry(id=id, text=text, metadata={}, writer=WRITER, semantic=True))
    return store


def measure_recall(directory: Path) -> dict[str, Any]:
    store = _with_facts(_store(directory / "recall.sqlite"))
    report = {
        label: _recall_row(store, semantic=label == "semantic") for label in ("keyword", "semantic")
    }
    store.close()
    return report


def measure_recall_postgres(servers: dict[str, PostgresServer]) -> dict[str, Any]:
    """Keyword (``ts_rank``) once, and semantic on each server: pgvector's ``<=>`` in the
    database, or blobs ranked in process."""
    report: dict[str, Any] = {}
    for label, server in servers.items():
        with _database(server) as url:
            store = _with_facts(DatabaseMemory(memory_engine(url)))
            if "keyword, PostgreSQL" not in report:
                report["keyword, PostgreSQL"] = _recall_row(store, semantic=False)
            report[f"semantic, PostgreSQL {label}"] = _recall_row(store, semantic=True)
            store.close()
    return report


def _generated(count: int, rng: random.Random) -> list[str]:
    return [
        f"{rng.choice(_NAMES)} asked about the {rng.choice(_WORDS)} and the "
        f"{rng.choice(_WORDS)} for {rng.choice(_WORDS)} number {n}"
        for n in range(count)
    ]


def _rows(texts: list[str]) -> list[dict[str, Any]]:
    """The generated entries as ``eve_memories`` rows of the bench's scope."""
    now = time.time()
    return [
        {
            "id": f"mem_{n:08d}",
            "namespace": "bench",
            "node_id": "__root__",
            "slot": "memory",
            "scope": "agent",
            "owner": "",
            "principal_kind": "operator",
            "principal_id": "bench",
            "session_id": "ses_bench",
            "text": text,
            "metadata": "{}",
            "created_at": now,
            "updated_at": now,
        }
        for n, text in enumerate(texts)
    ]


def _fill(path: Path, count: int, rng: random.Random) -> tuple[float, float, Any]:
    """``count`` entries in one scope, written in one transaction; seconds to embed, write,
    and the vectors."""
    texts = _generated(count, rng)
    started = time.perf_counter()
    embedded_vectors = embedding.embed(texts)
    embedded = time.perf_counter()
    engine = memory_engine(f"sqlite:///{path}")
    create_memory_tables(engine)
    rows = _rows(texts)
    engine.dispose()
    # the entries and their vectors in one transaction, as DatabaseMemory.save writes them
    engine = vectors.vector_engine(f"sqlite:///{path}")
    vectors.create(engine)
    blobs = [embedding.to_bytes(vector) for vector in embedded_vectors]
    with engine.begin() as connection:
        connection.execute(sa.insert(memories), rows)
        vectors.add(
            connection, KEY, [(row["id"], blob) for row, blob in zip(rows, blobs, strict=True)]
        )
    engine.dispose()
    return embedded - started, time.perf_counter() - embedded, embedded_vectors


def _ranked_in_process(matrix: Any, queries: list[str]) -> float:
    """Median ms of ranking the scope's vectors in process (``embedding.nearest``), what a
    PostgreSQL search does once its cache holds the scope: the ranking alone, no I/O."""
    times = []
    for vector in embedding.embed(queries):
        started = time.perf_counter()
        embedding.nearest(vector, matrix, 5)
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 2)


def _timed(store: DatabaseMemory, queries: list[str], *, semantic: bool) -> dict[str, float]:
    started = time.perf_counter()
    store.search(KEY, queries[0], limit=5, semantic=semantic)  # warm: tables, model, cache
    first = (time.perf_counter() - started) * 1000
    times = []
    for query in queries:
        started = time.perf_counter()
        store.search(KEY, query, limit=5, semantic=semantic)
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return {
        "first_ms": round(first, 2),
        "median_ms": round(statistics.median(times), 2),
        "p95_ms": round(times[max(0, int(len(times) * 0.95) - 1)], 2),
    }


def _questions(rng: random.Random, count: int) -> list[str]:
    return [
        f"what did {rng.choice(_NAMES)} say about the {rng.choice(_WORDS)}" for _ in range(count)
    ]


def measure_latency(directory: Path, sizes: tuple[int, ...], queries: int) -> dict[str, Any]:
    rng = random.Random(29)
    asked = _questions(rng, queries)
    report: dict[str, Any] = {}
    for size in sizes:
        path = directory / f"latency-{size}.sqlite"
        embed_s, write_s, matrix = _fill(path, size, rng)
        store = _store(path)
        report[str(size)] = {
            "embed_s": round(embed_s, 2),
            "write_s": round(write_s, 2),
            "in_process_rank_ms": _ranked_in_process(matrix, asked),
            "keyword": _timed(store, asked, semantic=False),
            "semantic": _timed(store, asked, semantic=True),
            "database_mb": round(path.stat().st_size / 1e6, 1),
        }
        store.close()
    return report


@contextlib.contextmanager
def _database(server: PostgresServer) -> Iterator[str]:
    """A fresh database on ``server`` (SQLAlchemy URL), dropped afterwards."""
    url = server.database()
    try:
        yield "postgresql+psycopg://" + url.split("://", 1)[1]
    finally:
        server.drop(url)


def _fill_postgres(url: str, texts: list[str], blobs: list[bytes]) -> float:
    """The entries with their vectors as blobs and no stored ``text_search`` (as an eve
    before pgvector and the column wrote them), in batches of ``PG_BATCH``; seconds."""
    engine = memory_engine(url)
    create_memory_tables(engine)
    with engine.begin() as c:
        for statement in EARLIER_KEYWORD_SCHEMA:
            c.exec_driver_sql(statement)
    rows = _rows(texts)
    started = time.perf_counter()
    for row, blob in zip(rows, blobs, strict=True):
        row["embedding"] = blob
    for at in range(0, len(rows), PG_BATCH):
        with engine.begin() as c:
            c.execute(sa.insert(memories), rows[at : at + PG_BATCH])
    engine.dispose()
    return time.perf_counter() - started


def _megabytes(store: DatabaseMemory) -> float:
    with store.engine.connect() as c:
        size = c.execute(sa.text("SELECT pg_database_size(current_database())")).scalar_one()
    return round(size / 1e6, 1)


def measure_latency_postgres(
    servers: dict[str, PostgresServer], sizes: tuple[int, ...], queries: int
) -> dict[str, Any]:
    """Per size and server: the fill, pgvector's upgrade of the blobs, keyword and semantic
    query times, and the database's size."""
    asked = _questions(random.Random(29), queries)
    report: dict[str, Any] = {}
    for size in sizes:
        texts = _generated(size, random.Random(size))
        blobs = [embedding.to_bytes(v) for v in embedding.embed(texts)]
        row: dict[str, Any] = {}
        for label, server in servers.items():
            with _database(server) as url:
                result: dict[str, Any] = {"write_s": round(_fill_postgres(url, texts, blobs), 2)}
                store = DatabaseMemory(memory_engine(url))
                # what the first call of an upgraded eve does: the stored column and its index
                started = time.perf_counter()
                create_memory_tables(store.engine)
                result["keyword_upgrade_s"] = round(time.perf_counter() - started, 2)
                if label == PGVECTOR:
                    # what the first semantic call of an upgraded eve does, timed apart
                    started = time.perf_counter()
                    support = pgvector.prepare(store.engine)
                    assert support is pgvector.Support.READY, support
                    result["upgrade_s"] = round(time.perf_counter() - started, 2)
                    result["keyword"] = _timed(store, asked, semantic=False)
                result["semantic"] = _timed(store, asked, semantic=True)
                result["database_mb"] = _megabytes(store)
                store.close()
            row[label] = result
        report[str(size)] = row
    return report


@contextlib.contextmanager
def _postgres_servers() -> Iterator[dict[str, PostgresServer] | str]:
    """pgserver's PostgreSQL 16 (pgvector) and Debian's (none), or why not both."""
    bindirs = {PGVECTOR: pgserver_bindir(), IN_PROCESS: find_bindir()}
    missing = [label for label, bindir in bindirs.items() if bindir is None]
    if missing:
        yield (
            f"skipped: no server binaries for {' and '.join(missing)} (pgserver comes with "
            "pip install -e '.[dev]', Debian's PostgreSQL with scripts/ensure-postgres)"
        )
        return
    servers: dict[str, PostgresServer] = {}
    try:
        for label, bindir in bindirs.items():
            assert bindir is not None
            servers[label] = PostgresServer.start(bindir, durable=True)
    except (PostgresUnavailable, OSError, subprocess.SubprocessError) as error:
        for server in servers.values():
            server.stop()
        yield f"skipped: could not start PostgreSQL: {error}"
        return
    try:
        yield servers
    finally:
        for server in servers.values():
            server.stop()


def _table(report: dict[str, Any]) -> str:
    lines = [
        "# memory_search",
        "",
        f"Recall on {report['facts']} labelled facts and {report['questions']} questions "
        "(half share a word with their fact, half paraphrase it), on SQLite unless the row "
        "names PostgreSQL:",
        "",
        "| search | recall@1 | recall@3 | recall@5 | recall@3, sharing a word "
        "| recall@3, paraphrased |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    postgres = report["recall_postgres"]
    recall = {**report["recall"], **(postgres if isinstance(postgres, dict) else {})}
    for label, row in recall.items():
        lines.append(
            f"| {label} | {row['recall@1']:.2f} | {row['recall@3']:.2f} | {row['recall@5']:.2f} "
            f"| {row['recall@3 sharing a word']:.2f} | {row['recall@3 paraphrased']:.2f} |"
        )
    lines += [
        "",
        f"Query latency, one scope, 5 results, {report['queries']} queries (SQLite file; the "
        "in-process ranking is PostgreSQL's semantic path with its cache warm, ranking alone):",
        "",
        "| entries | keyword median ms | keyword p95 ms | semantic (vec0) median ms "
        "| semantic (vec0) p95 ms | in-process ranking median ms | embed all s | write all s "
        "| database MB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size, row in report["latency"].items():
        lines.append(
            f"| {int(size):,} | {row['keyword']['median_ms']} | {row['keyword']['p95_ms']} "
            f"| {row['semantic']['median_ms']} | {row['semantic']['p95_ms']} "
            f"| {row['in_process_rank_ms']} | {row['embed_s']} | {row['write_s']} "
            f"| {row['database_mb']} |"
        )
    lines += ["", *_postgres_table(report), ""]
    lines += [
        f"Python {report['python']} on {report['platform']} ({report['cpu_count']} CPUs, "
        f"1-minute load {report['load_average_1m']:.1f}); wordllama {report['wordllama']}, "
        f"sqlite-vec {report['sqlite-vec']}; pgserver {report['pgserver']} "
        f"({report['postgres_versions']}); {report['date']}.",
        "",
    ]
    return "\n".join(lines)


def _postgres_table(report: dict[str, Any]) -> list[str]:
    latency = report["latency_postgres"]
    if isinstance(latency, str):
        return [f"PostgreSQL: {latency}."]
    lines = [
        f"Query latency on PostgreSQL, the same scope, 5 results, {report['queries']} queries: "
        f"`{PGVECTOR}` is a `<=>` query on pgserver's PostgreSQL 16, `{IN_PROCESS}` blobs "
        "ranked by cosine in the process (Debian's PostgreSQL 15, no pgvector), whose first "
        "search reads the scope's vectors into its cache; the entries written as an eve before "
        "pgvector and the stored `text_search` column wrote them (vectors as blobs), then the "
        "keyword upgrade (the column and its GIN index) and the pgvector store's upgrade "
        "(the blobs moved into `eve_memories_vec`) timed apart:",
        "",
        "| entries | semantic search | write all s | keyword upgrade s | pgvector upgrade s "
        "| keyword median ms | keyword p95 ms | semantic first ms | semantic median ms "
        "| semantic p95 ms | database MB |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size, servers in latency.items():
        for label, row in servers.items():
            keyword = row.get("keyword", {})
            semantic = row["semantic"]
            lines.append(
                f"| {int(size):,} | {label} | {row['write_s']} | {row['keyword_upgrade_s']} "
                f"| {row.get('upgrade_s', '')} "
                f"| {keyword.get('median_ms', '')} | {keyword.get('p95_ms', '')} "
                f"| {semantic['first_ms']} | {semantic['median_ms']} | {semantic['p95_ms']} "
                f"| {row['database_mb']} |"
            )
    return lines


def run(*, quick: bool = False) -> dict[str, Any]:
    sizes, queries = (QUICK_SIZES, QUICK_QUERIES) if quick else (SIZES, QUERIES)
    with tempfile.TemporaryDirectory() as tmp, _postgres_servers() as servers:
        directory = Path(tmp)
        report: dict[str, Any] = {
            **machine_info(),
            "date": datetime.now(UTC).date().isoformat(),
            "wordllama": package_version("wordllama"),
            "sqlite-vec": package_version("sqlite-vec"),
            "facts": len(FACTS),
            "questions": len(QUESTIONS),
            "queries": queries,
            "recall": measure_recall(directory),
            "latency": measure_latency(directory, sizes, queries),
            "pgserver": package_version("pgserver") if pgserver_bindir() else "not installed",
        }
        if isinstance(servers, str):
            report.update(postgres_versions="none", recall_postgres=servers)
            report["latency_postgres"] = servers
        else:
            report["postgres_versions"] = ", ".join(s.version for s in servers.values())
            report["recall_postgres"] = measure_recall_postgres(servers)
            report["latency_postgres"] = measure_latency_postgres(servers, sizes, queries)
    publish(NAME, report, _table(report), quick=quick)
    return report


if __name__ == "__main__":
    run(quick="--quick" in sys.argv[1:])
