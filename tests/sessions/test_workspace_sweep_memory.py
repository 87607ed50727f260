"""Retention's workspace sweep works in bounded memory (``eve.sessions.workspace_sweep``):
what it allocates does not grow with the number of trees and blobs in the store."""

from __future__ import annotations

import hashlib
import tracemalloc
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from eve.sandbox.snapshot import Node, Tree, encode_tree, tree_id
from eve.sessions.store import SessionStore
from eve.sessions.tables import workspace_blobs, workspace_heads, workspace_trees
from eve.sessions.workspace_sweep import SweepReport, sweep_trees

#: files per tree: small trees, so a page of them holds few hashes and the store many
FILES = 4


def _add(c: Connection, first: int, count: int) -> None:
    """Blobs ``first`` … ``first + count - 1``, in trees of ``FILES``; every other tree a
    session's head (kept), the rest named by nothing (swept)."""
    shas = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(first, first + count)]
    c.execute(sa.insert(workspace_blobs), [{"sha256": s, "data": b"x"} for s in shas])
    trees = [
        Tree(nodes={f"f{i}": Node(kind="file", ref=s) for i, s in enumerate(shas[at:][:FILES])})
        for at in range(0, count, FILES)
    ]
    rows = [{"tree_id": tree_id(t), "tree": encode_tree(t).decode()} for t in trees]
    c.execute(sa.insert(workspace_trees), rows)
    heads = [{"session_id": f"s{first}-{n}", "tree_id": r["tree_id"]} for n, r in enumerate(rows)]
    c.execute(sa.insert(workspace_heads), heads[::2])


def _peak_of_a_dry_run(store: SessionStore) -> tuple[SweepReport, int]:
    tracemalloc.start()
    try:
        report = store.run(lambda c: sweep_trees(c, gone=set(), dry_run=True))
        return report, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_sweeps_memory_does_not_grow_with_the_store(tmp_path: Path) -> None:
    store = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    try:
        store.run(lambda c: _add(c, 0, 1_000))
        store.run(lambda c: sweep_trees(c, gone=set(), dry_run=True))  # statements compiled
        small, small_peak = _peak_of_a_dry_run(store)
        store.run(lambda c: _add(c, 1_000, 9_000))
        large, large_peak = _peak_of_a_dry_run(store)
    finally:
        store.close()
    assert small == SweepReport(trees=125, blobs=500, freed_bytes=500)
    assert large == SweepReport(trees=1_250, blobs=5_000, freed_bytes=5_000)
    # ten times the blobs: holding every hash (the sweep before) took about ten times the
    # memory; a page at a time takes the same
    assert large_peak < 2 * small_peak, (small_peak, large_peak)
