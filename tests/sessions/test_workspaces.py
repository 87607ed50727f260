"""Durable workspaces (``eve.sessions.workspaces``): a sandboxed session's files checkpointed
in the session store, on SQLite and PostgreSQL, and put back after a crash, on a reset and
for a fork."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
import sqlalchemy as sa

from eve.errors import WorkspaceTooLarge
from eve.manifest import ROOT_NODE_ID, SandboxEntry, SandboxLimitsEntry
from eve.sandbox.bindings import bind_sandbox, session_directory
from eve.sessions.store import SessionStore
from eve.sessions.tables import workspace_blobs, workspace_heads
from eve.sessions.workspaces import WorkspaceKeeper, copy_head, keeper_for
from tests.conftest import AppFactory, wait_for_file
from tests.sessions.apps import SCRIPTED_AGENT, call, say
from tests.sessions.harness import Server, count, script
from tests.sessions.inprocess import InProcessServer

LIMITS = SandboxLimitsEntry(
    cpu_seconds=10, memory_mb=512, processes=256, file_size_mb=8, wall_seconds=30, workspace_mb=1
)


@pytest.fixture
def store(either_store: SessionStore) -> SessionStore:
    return either_store


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return seeded_root(tmp_path)


def seeded_root(tmp_path: Path) -> Path:
    """A workspace root whose sandbox seeds every session with ``seed.txt``."""
    seed = tmp_path / "agent" / "sandbox" / "workspace" / "seed.txt"
    seed.parent.mkdir(parents=True)
    seed.write_text("seeded\n")
    entry = SandboxEntry(
        provider="local",
        limits=LIMITS,
        workspace_files=["agent/sandbox/workspace/seed.txt"],
        logical_path="agent/sandbox.py",
    )
    workspace_root = tmp_path / "workspace"
    bind_sandbox(workspace_root, ROOT_NODE_ID, entry, app_root=tmp_path)
    return workspace_root


def keeper(store: SessionStore, root: Path, session_id: str = "s1") -> WorkspaceKeeper:
    found = keeper_for(store, root, ROOT_NODE_ID, session_id)
    assert found is not None
    found.open()
    return found


def files(directory: Path) -> dict[str, str]:
    return {
        p.relative_to(directory).as_posix(): p.read_text()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def test_a_new_session_starts_from_the_seed_files(store: SessionStore, root: Path) -> None:
    kept = keeper(store, root)
    assert files(kept.directory) == {"seed.txt": "seeded\n"}


def test_a_checkpoint_restores_what_a_step_left(store: SessionStore, root: Path) -> None:
    kept = keeper(store, root)
    (kept.directory / "notes").mkdir()
    (kept.directory / "notes" / "a.txt").write_text("one\n")
    after_step = kept.checkpoint()
    # what an attempt that died before its record wrote
    (kept.directory / "notes" / "a.txt").write_text("half written")
    (kept.directory / "b.txt").write_text("never recorded\n")
    (kept.directory / "seed.txt").unlink()
    kept.restore(after_step)
    assert files(kept.directory) == {"notes/a.txt": "one\n", "seed.txt": "seeded\n"}


def test_each_content_is_stored_once(store: SessionStore, root: Path) -> None:
    first = keeper(store, root, "s1")
    second = keeper(store, root, "s2")
    for kept in (first, second):
        (kept.directory / "copy.txt").write_text("seeded\n")  # the seed's bytes again
        kept.checkpoint()
    blobs = store.run(lambda c: c.execute(sa.select(sa.func.count()).select_from(workspace_blobs)))
    assert blobs.scalar() == 1


def test_a_worker_without_the_directory_restores_it_from_the_head(
    store: SessionStore, root: Path
) -> None:
    kept = keeper(store, root)
    (kept.directory / "made.txt").write_text("made\n")
    kept.checkpoint()
    other_worker = session_directory(root, "s1")
    for path in sorted(other_worker.rglob("*"), reverse=True):
        path.unlink()
    other_worker.rmdir()
    assert files(keeper(store, root).directory) == {"made.txt": "made\n", "seed.txt": "seeded\n"}


def test_a_reset_puts_back_the_seed_files(store: SessionStore, root: Path) -> None:
    kept = keeper(store, root)
    (kept.directory / "seed.txt").write_text("changed\n")
    (kept.directory / "extra.txt").write_text("extra\n")
    kept.checkpoint()
    kept.reset()
    assert files(keeper(store, root).directory) == {"seed.txt": "seeded\n"}


def test_a_fork_starts_from_the_sources_workspace(store: SessionStore, root: Path) -> None:
    source = keeper(store, root, "source")
    (source.directory / "work.txt").write_text("half done\n")
    source.checkpoint()
    assert store.run(lambda c: copy_head(c, "source", "fork"))
    forked = keeper(store, root, "fork")
    (forked.directory / "work.txt").write_text("done in the fork\n")
    forked.checkpoint()
    assert files(forked.directory) == {"seed.txt": "seeded\n", "work.txt": "done in the fork\n"}
    assert files(keeper(store, root, "source").directory)["work.txt"] == "half done\n"
    assert not store.run(lambda c: copy_head(c, "no-such-session", "other"))


def test_a_workspace_over_its_cap_is_refused(store: SessionStore, root: Path) -> None:
    kept = keeper(store, root)
    (kept.directory / "big.bin").write_bytes(b"x" * (LIMITS.workspace_mb * 1024 * 1024))
    with pytest.raises(WorkspaceTooLarge, match="over its cap of 1,048,576") as raised:
        kept.checkpoint()
    assert raised.value.size > raised.value.limit == 1024 * 1024


#: a scripted agent with ``write_file`` and a local sandbox seeded with ``seed.txt``
SANDBOXED_AGENT = {
    "agent/agent.py": """
        from eve import define_agent
        default = define_agent(
            model="offline/script:script.json",
            builtin_tools=["write_file"],
            limits={"max_turns": 5},
        )
    """,
    "agent/instructions.md": "Follow the script.\n",
    "agent/sandbox.py": """
        from eve.sandbox import define_sandbox
        default = define_sandbox(provider="local")
    """,
    "agent/sandbox/workspace/seed.txt": "seeded\n",
}

#: writes what it found in the workspace on entry, then marks the workspace and waits for
#: the test to release it: the run the test kills is always inside this step
LOOK_AND_HOLD = '''
    import asyncio
    from pathlib import Path
    from eve.tools import ToolContext, tool

    @tool
    async def look_and_hold(ctx: ToolContext) -> str:
        """List the workspace, write to it, then wait for the test."""
        workspace = ctx.sandbox.workspace
        seen = sorted(p.name for p in workspace.iterdir())
        (workspace / "from_the_hold.txt").write_text("written by this attempt")
        with Path("seen.log").open("a") as log:
            log.write(",".join(seen) + "\\n")
        Path("hold.started").write_text("yes")
        while not Path("hold.release").exists():
            await asyncio.sleep(0.05)
        return "saw " + ",".join(seen)
'''


def test_a_turn_resumed_after_a_crash_sees_the_files_it_saw(make_app: AppFactory) -> None:
    root = make_app(
        {**SANDBOXED_AGENT, "agent/tools/look_and_hold.py": LOOK_AND_HOLD}, minimal=False
    )
    script(
        root,
        [
            call("write_file", path="a.txt", content="from step one"),
            call("look_and_hold"),
            say("done"),
        ],
    )
    server = Server(root).start()
    try:
        session = server.create("go")
        wait_for_file(root / "hold.started")
        directory = session_directory(root / "workspace", session)
        assert (directory / "from_the_hold.txt").exists()
        server.kill()
        (root / "hold.started").unlink()
        (root / "hold.release").write_text("go")
        server.restart()
        events = server.wait_for(session, count("session.waiting", 1))
    finally:
        server.stop()
    # both attempts saw the workspace as step one left it: the file the killed attempt
    # wrote after step one's record was gone before the step ran again
    assert (root / "seen.log").read_text().splitlines() == ["a.txt,seed.txt"] * 2
    results = [e["data"] for e in events if e["type"] == "action.result"]
    assert msgspec.json.encode(results).decode().count("saw a.txt,seed.txt") == 1
    assert files(directory) == {
        "a.txt": "from step one",
        "from_the_hold.txt": "written by this attempt",
        "seed.txt": "seeded\n",
    }


def subagent_app(make_app: AppFactory) -> Path:
    """A sandboxed agent whose first turn calls a subagent that writes ``found.txt``."""
    root = make_app(
        {
            "agent/agent.py": SCRIPTED_AGENT.replace("{limits}", "{'max_turns': 5}"),
            "agent/instructions.md": "Follow the script.\n",
            "agent/sandbox.py": """
                from eve.sandbox import define_sandbox
                default = define_sandbox(provider="local")
            """,
            "agent/subagents/researcher/agent.py": """
                from eve import define_agent
                default = define_agent(description="Looks things up.", builtin_tools=["write_file"])
            """,
            "agent/subagents/researcher/instructions.md": "Research.\n",
        },
        minimal=False,
    )
    responses = {
        "__root__": [call("researcher", message="note it"), say("noted")],
        "researcher": [call("write_file", path="found.txt", content="42"), say("written")],
    }
    (root / "script.json").write_text(json.dumps(responses), encoding="utf-8")
    return root


def test_a_sandboxed_subagent_keeps_a_workspace_of_its_own(make_app: AppFactory) -> None:
    root = subagent_app(make_app)
    server = InProcessServer(root).start()
    try:
        session = server.create("go")
        server.wait_for(session, count("session.waiting"))
    finally:
        server.stop()
    [child] = [d for d in (root / "workspace" / "sessions").iterdir() if d.name != session]
    assert (child / "found.txt").read_text() == "42"  # the inherited sandbox, its own session
    store = SessionStore(f"sqlite:///{root / '.eve' / 'sessions' / 'eve.sqlite'}")
    try:
        heads = dict(store.run(lambda c: c.execute(sa.select(workspace_heads)).all()))
    finally:
        store.close()
    assert child.name in heads  # checkpointed with the subagent's steps


def test_a_session_reset_puts_back_the_seed_files(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/agent.py": """
                from eve import define_agent
                default = define_agent(
                    model="offline/script:script.json", builtin_tools=["write_file"]
                )
            """,
            "agent/instructions.md": "Follow the script.\n",
            "agent/sandbox.py": """
                from eve.sandbox import define_sandbox
                default = define_sandbox(provider="local")
            """,
            "agent/sandbox/workspace/seed.txt": "seeded\n",
        },
        minimal=False,
    )
    script(root, [call("write_file", path="seed.txt", content="changed"), say("done")])
    server = InProcessServer(root).start()
    try:
        session = server.create("change it")
        server.wait_for(session, count("session.waiting"))
        directory = session_directory(root / "workspace", session)
        assert files(directory) == {"seed.txt": "changed"}
        assert server.post(f"/session/{session}/reset").status_code == 200
        server.wait_for(session, count("session.reset"))
    finally:
        server.stop()
    assert files(directory) == {"seed.txt": "seeded\n"}
