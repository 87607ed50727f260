"""Session workspaces on a worker's disk (``eve.sessions.workspace_disk``): an ended
session's directory and one unused for ``EVE_WORKSPACE_IDLE`` go unless a turn of the
session is busy, and the next turn restores it from the session store."""

from __future__ import annotations

import os
import time
from pathlib import Path

from click.testing import CliRunner

from eve.cli.main import main
from eve.execution.subagents import child_session_id
from eve.sandbox.bindings import session_directory
from eve.sessions.store import SessionStore
from eve.sessions.workspace_disk import configured_idle, remove_unused, turn_busy
from tests.conftest import AppFactory
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer
from tests.sessions.test_workspace_sweep import approve, park, sandboxed_server
from tests.sessions.test_workspaces import files, keeper, seeded_root, subagent_app

#: a last use this long ago is past any idle period these tests set
LONG_AGO = 7 * 86400.0


def _age(directory: Path) -> None:
    then = time.time() - LONG_AGO
    os.utime(directory, (then, then))


def test_ended_and_idle_workspaces_go_and_come_back_from_the_store(tmp_path: Path) -> None:
    root = seeded_root(tmp_path)
    store = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    try:
        for session in ("idle", "fresh", "ended", "busy"):
            store.create_session(session)
        store.end_session("ended", "test")
        directories = {}
        for session in ("idle", "fresh", "ended", "busy", "child"):
            opened = keeper(store, root, session)
            (opened.directory / "work.txt").write_text(f"{session}'s work\n")
            opened.checkpoint()
            directories[session] = opened.directory
        for session in ("idle", "busy", "child"):
            _age(directories[session])

        def remove(idle_after: float | None) -> list[str]:
            return remove_unused(
                store,
                root,
                idle_after=idle_after,
                busy=lambda session: session == "busy",
                tasks=list,
            )

        assert remove(None) == ["ended"]  # EVE_WORKSPACE_IDLE=off: ended ones only
        # a directory no session row and no kept task names stays
        assert remove(3600) == ["idle"]
        assert {s for s, d in directories.items() if d.is_dir()} == {"fresh", "busy", "child"}
        # a turn's opening puts it back as its last step left it
        assert files(keeper(store, root, "idle").directory) == {
            "seed.txt": "seeded\n",
            "work.txt": "idle's work\n",
        }
        assert remove(3600) == []  # opening it was a use
    finally:
        store.close()


def test_a_subagents_workspace_goes_as_its_callers_would_and_never_while_it_is_busy(
    tmp_path: Path,
) -> None:
    root = seeded_root(tmp_path)
    store = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    #: a task of each caller's turn (``nested``: a subagent's subagent under ``idle``)
    tasks = {
        "busy": "busy:turn-0:task-0-call_a",
        "ended": "ended:turn-1:task-2-call_b",
        "idle": "idle:turn-0:task-0-call_c",
        "nested": "idle:turn-0:task-0-call_c:task-1-call_d",
        "fresh": "fresh:turn-0:task-0-call_e",
    }
    children = {name: child_session_id(task) for name, task in tasks.items()}
    try:
        for caller in ("busy", "ended", "idle", "fresh"):
            store.create_session(caller)
        store.end_session("ended", "test")
        for name, child in children.items():
            keeper(store, root, child).checkpoint()
            if name not in {"ended", "fresh"}:
                _age(session_directory(root, child))
        removed = remove_unused(
            store,
            root,
            idle_after=3600,
            busy=lambda session: session == "busy",
            tasks=tasks.values,
        )
        assert sorted(removed) == sorted(children[n] for n in ("ended", "idle", "nested"))
        kept = {n for n, c in children.items() if session_directory(root, c).is_dir()}
        assert kept == {"busy", "fresh"}
        # EVE_WORKSPACE_IDLE=off: an ended caller's child still goes, an idle one's stays
        for name in ("ended", "idle"):
            keeper(store, root, children[name])
            _age(session_directory(root, children[name]))
        off = remove_unused(store, root, idle_after=None, busy=lambda _: False, tasks=tasks.values)
        assert off == [children["ended"]]
    finally:
        store.close()


def test_a_subagents_workspace_is_found_through_its_task_in_dbos(make_app: AppFactory) -> None:
    root = subagent_app(make_app)
    workspace = root / "workspace"
    server = InProcessServer(root).start()
    try:
        session = server.create("go")
        server.wait_for(session, count("session.waiting"))
        [child] = [d for d in (workspace / "sessions").iterdir() if d.name != session]
        _age(child)
        store = SessionStore(f"sqlite:///{root / '.eve' / 'sessions' / 'eve.sqlite'}")
        try:
            # DBOS (launched in this process) keeps the subagent's task, named by the turn
            assert remove_unused(store, workspace, idle_after=3600, busy=turn_busy) == [child.name]
        finally:
            store.close()
    finally:
        server.stop()


def test_a_parked_turns_workspace_stays_and_a_done_ones_is_restored(
    make_app: AppFactory,
) -> None:
    with sandboxed_server(make_app) as (server, settings):
        done, request = park(server)
        approve(server, done, request)
        parked, _ = park(server)
        workspace = server.app_root / "workspace"
        for session in (done, parked):
            _age(session_directory(workspace, session))
        store = SessionStore(settings.eve_url)
        try:
            # DBOS (launched in this process) lists the parked turn as pending
            assert remove_unused(store, workspace, idle_after=60, busy=turn_busy) == [done]
        finally:
            store.close()
        assert session_directory(workspace, parked).is_dir()
        assert not session_directory(workspace, done).exists()
        assert server.send(done, "more").status_code == 202
        server.wait_for(done, count("session.waiting", 2))
    assert files(session_directory(workspace, done)) == {
        "a.txt": "two",  # restored from the head before turn two wrote c.txt
        "c.txt": "final",
        "seed.txt": "seeded\n",
    }


def test_the_idle_period_is_read_from_the_environment(make_app: AppFactory) -> None:
    assert configured_idle({}) == 86400.0
    assert configured_idle({"EVE_WORKSPACE_IDLE": "2h"}) == 7200.0
    assert configured_idle({"EVE_WORKSPACE_IDLE": "off"}) is None
    result = CliRunner().invoke(
        main, ["-C", str(make_app()), "serve"], env={"EVE_WORKSPACE_IDLE": "soon"}
    )
    assert result.exit_code == 2, result.output
    assert "EVE_WORKSPACE_IDLE must be a number and a unit" in result.output
