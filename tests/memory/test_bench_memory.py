"""bench/memory_search.py still runs against today's memory store (benches are not
type-checked with the package): its recall measure, and a small latency fill."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from bench import memory_search
from tests.postgres import PostgresServer

# looked up, not imported: every test worker imports this module as it collects, and only
# those that run its tests need the package
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("wordllama") is None,
    reason="the bench embeds with the memory-semantic extra",
)


def test_the_recall_measure_scores_both_searches(tmp_path: Path) -> None:
    report = memory_search.measure_recall(tmp_path)
    assert set(report) == {"keyword", "semantic"}
    # every question sharing a word with its fact is found by either search
    assert report["keyword"]["recall@3 sharing a word"] == 1.0
    assert report["semantic"]["recall@5"] >= report["keyword"]["recall@5"]


def test_the_latency_measure_fills_a_scope_and_times_both(tmp_path: Path) -> None:
    report = memory_search.measure_latency(tmp_path, (200,), 2)
    row = report["200"]
    assert row["keyword"]["median_ms"] > 0 and row["semantic"]["median_ms"] > 0


def test_the_postgres_measures_use_pgvector_and_the_in_process_ranking(
    pgvector_server: PostgresServer, postgres_server: PostgresServer
) -> None:
    servers = {memory_search.PGVECTOR: pgvector_server, memory_search.IN_PROCESS: postgres_server}
    recall = memory_search.measure_recall_postgres(servers)
    # both rank exactly by cosine, so they find the same facts
    pgvector, in_process = (recall[f"semantic, PostgreSQL {label}"] for label in servers)
    assert (
        pgvector == in_process and pgvector["recall@5"] > recall["keyword, PostgreSQL"]["recall@5"]
    )
    report = memory_search.measure_latency_postgres(servers, (200,), 2)
    row = report["200"]
    assert row[memory_search.PGVECTOR]["upgrade_s"] > 0
    assert all(row[label]["keyword_upgrade_s"] > 0 for label in servers)
    assert row[memory_search.PGVECTOR]["keyword"]["median_ms"] > 0
    assert all(row[label]["semantic"]["median_ms"] > 0 for label in servers)
