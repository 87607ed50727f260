"""Session workspaces on a worker's disk (``eve.sessions.workspace_disk``): an ended
session's directory and one unused for ``EVE_WORKSPACE_IDLE`` go unless a turn of the
session is busy, and the next turn restores it from the session store."""

from __future__ import annotations

import os
import time
from pathlib import Path

from click.testing import CliRunner

from eve.cli.main import main
from eve.sandbox.bindings import session_directory
from eve.sessions.store import SessionStore
from eve.sessions.workspace_disk import configured_idle, remove_unused, turn_busy
from tests.conftest import AppFactory
from tests.sessions.harness import count
from tests.sessions.test_workspace_sweep import approve, park, sandboxed_server
from tests.sessions.test_workspaces import files, keeper, seeded_root

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
                store, root, idle_after=idle_after, busy=lambda session: session == "busy"
            )

        assert remove(None) == ["ended"]  # EVE_WORKSPACE_IDLE=off: ended ones only
        # a child session (no row: its task's workflow is not under its id) stays
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
