"""Retention's sweep of workspace storage (``eve.sessions.workspace_sweep``), on SQLite and
PostgreSQL: the trees and blobs of deleted workflows go; a session's head, a parked
turn's step trees and a fork's shared files stay."""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
import sqlalchemy as sa

from eve.manifest import ROOT_NODE_ID
from eve.sandbox.bindings import session_directory
from eve.sessions.retention import _client, prune_workflows
from eve.sessions.settings import SessionSettings, resolve_settings
from eve.sessions.step_records import list_records
from eve.sessions.store import SessionStore
from eve.sessions.tables import mcp_calls, workspace_blobs, workspace_heads, workspace_trees
from eve.sessions.workspace_sweep import SweepReport, sweep_trees
from eve.sessions.workspaces import copy_head, keeper_for
from tests.cli.test_sessions_cli import _prune
from tests.conftest import AppFactory
from tests.sessions.apps import TOOLS, call, say
from tests.sessions.harness import count, script
from tests.sessions.inprocess import InProcessServer
from tests.sessions.test_approvals import request_of
from tests.sessions.test_workspaces import SANDBOXED_AGENT, files, keeper, seeded_root

#: a prune that sees every workflow as an hour old
LATER = 3600.0

#: turn one writes a.txt twice and waits for an approval; turn two writes c.txt twice, so
#: its first c.txt ("temporary", 9 bytes) is in one tree no later step or head names
SCRIPT = [
    call("write_file", path="a.txt", content="one"),
    call("write_file", path="a.txt", content="two"),
    call("ship", item="anvil"),
    say("shipped"),
    call("write_file", path="c.txt", content="temporary"),
    call("write_file", path="c.txt", content="final"),
    say("done"),
]


def _trees(store: SessionStore) -> set[str]:
    return set(store.run(lambda c: c.execute(sa.select(workspace_trees.c.tree_id)).scalars().all()))


def _blob_count(store: SessionStore) -> int:
    query = sa.select(sa.func.count()).select_from(workspace_blobs)
    return int(store.run(lambda c: c.execute(query).scalar_one()))


def _sandboxed_app(make_app: AppFactory) -> Path:
    """An agent with a local sandbox seeded with ``seed.txt``, following ``SCRIPT``."""
    root = make_app({**SANDBOXED_AGENT, "agent/tools/ship.py": TOOLS["ship"]}, minimal=False)
    script(root, SCRIPT)
    return root


@contextlib.contextmanager
def sandboxed_server(make_app: AppFactory) -> Iterator[tuple[InProcessServer, SessionSettings]]:
    """``_sandboxed_app`` served in process on SQLite, and its settings."""
    root = _sandboxed_app(make_app)
    server = InProcessServer(root, env={}).start()
    try:
        yield server, resolve_settings(root, env={})
    finally:
        server.stop()


def park(server: InProcessServer) -> tuple[str, str]:
    """A new session whose first turn waits for its approval: its id and the request's."""
    session = server.create("write")
    return session, request_of(server.wait_for(session, count("turn.waiting")))["request_id"]


def approve(server: InProcessServer, session: str, request_id: str) -> list[str]:
    """Approve the parked turn and wait for its end; what it said."""
    server.answer(session, request_id, "approve")
    events = server.wait_for(session, count("session.waiting"))
    return [e["data"]["message"] for e in events if e["type"] == "message.completed"]


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_prune_sweeps_old_trees_and_keeps_heads_and_a_parked_turns_trees(
    make_app: AppFactory, database: str, request: pytest.FixtureRequest
) -> None:
    root = _sandboxed_app(make_app)
    env = (
        {}
        if database == "sqlite"
        else {"EVE_DATABASE_URL": request.getfixturevalue("postgres_url")}
    )
    settings = resolve_settings(root, env=env)
    server = InProcessServer(root, env=env).start()
    try:
        done, request = park(server)
        approve(server, done, request)
        assert server.send(done, "more").status_code == 202
        server.wait_for(done, count("session.waiting", 2))
        parked, waiting = park(server)

        store = SessionStore(settings.eve_url)
        try:
            _record_mcp_calls(settings, store)
            before, blobs = _trees(store), _blob_count(store)
            later = time.time() + LATER
            dry = prune_workflows(settings, older_than=60, dry_run=True, now=later)
            assert dry.workspace == SweepReport(
                trees=1, blobs=1, freed_bytes=len("temporary"), mcp_calls=1
            )
            assert (_trees(store), _blob_count(store)) == (before, blobs), "a dry run deleted"
            database_option = (
                [] if database == "sqlite" else ["--database", env["EVE_DATABASE_URL"]]
            )
            code, out = _prune(root, "--older-than", "0s", "--dry-run", *database_option)
            assert code == 0, out
            assert "would delete 1 workspace tree(s) and 1 file content(s) (9 bytes)" in out

            pruned = prune_workflows(settings, older_than=60, dry_run=False, now=later)
            assert pruned.deleted == {"SUCCESS": 2}
            assert pruned.workspace == dry.workspace
            assert pruned.workspace.mcp_calls == 1
            # the parked turn's MCP call record stays for its replay; the gone one's went
            kept_calls = store.run(lambda c: c.execute(sa.select(mcp_calls.c.call_key)).all())
            assert [key for (key,) in kept_calls] == ["parked-call"]
            assert len(_trees(store)) == len(before) - 1
            assert _blob_count(store) == blobs - 1
            _assert_the_parked_turns_trees_are_kept(settings, store)
            # a second run finds nothing more
            again = prune_workflows(settings, older_than=60, dry_run=False, now=later)
            assert again.workspace == SweepReport()

            # the head restores the session's files on a worker without its directory
            directory = session_directory(root / "workspace", done)
            shutil.rmtree(directory)
            _reopen(store, root, done)
            assert files(directory) == {"a.txt": "two", "c.txt": "final", "seed.txt": "seeded\n"}
        finally:
            store.close()
        assert approve(server, parked, waiting) == ["shipped"]
    finally:
        server.stop()


def _reopen(store: SessionStore, root: Path, session_id: str) -> None:
    reopened = keeper_for(store, root / "workspace", ROOT_NODE_ID, session_id)
    assert reopened is not None
    reopened.open()


def _record_mcp_calls(settings: SessionSettings, store: SessionStore) -> None:
    """An MCP call record of the parked turn, and one of a workflow DBOS does not have."""
    with _client(settings) as client:
        [workflow] = client.list_workflows(status="PENDING", load_input=False)
    rows = [("parked-call", workflow.workflow_id), ("gone-call", "ses_gone:turn-1")]
    store.run(
        lambda c: c.execute(
            sa.insert(mcp_calls), [{"call_key": k, "workflow_id": w} for k, w in rows]
        )
    )


def _assert_the_parked_turns_trees_are_kept(settings: SessionSettings, store: SessionStore) -> None:
    """Every tree the parked turn's step records name is there for its replay."""
    with _client(settings) as client:
        [workflow] = client.list_workflows(status="PENDING", load_input=False)
    steps = store.run(lambda c: list_records(c, workflow.workflow_id))
    records = [msgspec.json.decode(record) for _, record in steps]
    named = {r["workspace"] for r in records if r.get("workspace")}
    heads = set(
        store.run(lambda c: c.execute(sa.select(workspace_heads.c.tree_id)).scalars().all())
    )
    # a=one is in no head: only the parked turn's note keeps it
    assert named - heads and named <= _trees(store)


def test_a_forks_shared_files_stay_while_either_session_needs_them(
    either_store: SessionStore, tmp_path: Path
) -> None:
    root = seeded_root(tmp_path)
    source = keeper(either_store, root, "source")
    (source.directory / "work.txt").write_text("half done\n")
    shared = source.checkpoint()
    assert either_store.run(lambda c: copy_head(c, "source", "fork"))
    for text in ("a draft\n", "done in the source\n"):
        (source.directory / "work.txt").write_text(text)
        source.checkpoint()

    def sweep() -> SweepReport:
        return either_store.run(lambda c: sweep_trees(c, gone=set(), dry_run=False))

    # the draft's tree goes; the tree the fork's head names stays
    assert sweep() == SweepReport(trees=1, blobs=1, freed_bytes=len("a draft\n"))
    assert shared in _trees(either_store)
    shutil.rmtree(session_directory(root, "fork"), ignore_errors=True)
    forked = keeper(either_store, root, "fork")
    assert files(forked.directory) == {"seed.txt": "seeded\n", "work.txt": "half done\n"}

    # once the fork moves on too, "half done" goes; the seed's bytes both still hold stay
    (forked.directory / "work.txt").write_text("done in the fork\n")
    forked.checkpoint()
    assert sweep() == SweepReport(trees=1, blobs=1, freed_bytes=len("half done\n"))
    assert files(keeper(either_store, root, "source").directory)["seed.txt"] == "seeded\n"


def test_a_workflows_note_keeps_its_tree_until_the_workflow_is_gone(
    either_store: SessionStore, tmp_path: Path
) -> None:
    root = seeded_root(tmp_path)
    kept = keeper(either_store, root)
    (kept.directory / "step.txt").write_text("after step one\n")
    step_one = kept.checkpoint("s1:turn-1")
    (kept.directory / "step.txt").write_text("after step two\n")
    kept.checkpoint("s1:turn-1")

    def sweep(gone: set[str]) -> SweepReport:
        return either_store.run(lambda c: sweep_trees(c, gone=gone, dry_run=False))

    assert sweep(set()) == SweepReport()
    assert step_one in _trees(either_store)  # a replay of turn 1 restores it
    assert sweep({"s1:turn-1"}) == SweepReport(
        trees=1, blobs=1, freed_bytes=len("after step one\n")
    )
    assert step_one not in _trees(either_store)
