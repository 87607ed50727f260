"""As root, bubblewrap runs each session's commands as a user of the session's own: the
``processes`` budget is per session, and a session's files are its user's alone.

Real bwrap, as root (the only case where eve picks the user); skipped, saying why, when
the tests do not run as root.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import stat
from pathlib import Path

import msgspec
import pytest

from eve._cancellation import CancelSignal
from eve.builtins import write_file
from eve.errors import SandboxUnavailable
from eve.manifest import ROOT_NODE_ID
from eve.sandbox.bindings import bind_sandbox, sandbox_for
from eve.sandbox.bubblewrap import (
    SESSION_UID_BASE,
    check_session_ids_free,
    command_user,
    sandbox_environment,
    sandboxed_argv,
)
from eve.sandbox.process import run_process
from eve.sessions.store import SessionStore
from eve.sessions.workspaces import copy_head, keeper_for
from tests.builtins.conftest import call
from tests.sandbox.conftest import App

_AS_ROOT = pytest.mark.skipif(
    os.geteuid() != 0, reason="eve picks a session's user only when it runs as root"
)
#: processes a session's command holds while another session's command forks
_HELD = 35
#: holds ``_HELD`` processes, says so in a file, and keeps them until cancelled
_HOLD = f"for i in $(seq {_HELD}); do sleep 60 & done; touch held; wait"
#: forks ten children: refused were the budget shared with the holder above
_FORK_TEN = "for i in $(seq 10); do sleep 0.1 & done; wait; echo forked > forked.txt; echo forked"


async def _until_exists(path: Path) -> None:
    # the holder's command is another process: nothing to await but its file appearing
    while not path.exists():
        await asyncio.sleep(0.02)


@_AS_ROOT
async def test_one_sessions_processes_do_not_spend_anothers_budget(app: App) -> None:
    app.bind("bubblewrap", processes=40)
    holder_signal = CancelSignal()
    holder = dataclasses.replace(sandbox_for(app.ctx("session-a")), signal=holder_signal)
    holding = asyncio.ensure_future(holder.run(["bash", "-c", _HOLD], timeout=30))
    try:
        await asyncio.wait_for(_until_exists(holder.workspace / "held"), 20)
        forked = await sandbox_for(app.ctx("session-b")).run(["bash", "-c", _FORK_TEN])
    finally:
        holder_signal.cancel()
        held = await holding
    assert forked.exit_code == 0, forked
    assert forked.stdout == "forked\n" and "Resource temporarily" not in forked.stderr
    assert held.status == "cancelled"

    await call(write_file.default, app.ctx("session-b"), path="tool.txt", content="by eve\n")
    users = {session: command_user(session) for session in ("session-a", "session-b")}
    assert users["session-a"] != users["session-b"]
    for session, names in (("session-a", ["held"]), ("session-b", ["forked.txt", "tool.txt"])):
        directory = app.session_dir(session)
        info = directory.stat()
        assert (info.st_uid, info.st_gid) == (users[session], users[session])
        assert stat.S_IMODE(info.st_mode) == 0o700
        for name in names:
            assert (directory / name).stat().st_uid == users[session], name


@_AS_ROOT
async def test_a_session_cannot_read_anothers_workspace_even_when_reachable(app: App) -> None:
    entry = app.bind("bubblewrap")
    for session in ("session-a", "session-b"):
        done = await sandbox_for(app.ctx(session)).run(["bash", "-c", "echo private > notes.txt"])
        assert done.exit_code == 0, done

    async def cat_b_as(session: str) -> tuple[int | None, str, str]:
        # the whole sessions directory mounted: session-b's workspace is reachable by path
        argv = sandboxed_argv(
            ["cat", "/workspace/session-b/notes.txt"],
            workspace=app.session_dir(session).parent,
            session_id=session,
            limits=entry.limits,
            network=False,
        )
        done = await run_process(
            argv, cwd=Path("/"), env=sandbox_environment(), timeout=20, cancel=CancelSignal()
        )
        return done.exit_code, done.stdout, done.stderr

    assert await cat_b_as("session-b") == (0, "private\n", "")
    code, out, err = await cat_b_as("session-a")
    assert (code, out) == (1, "") and "Permission denied" in err


@_AS_ROOT
async def test_seeded_restored_and_forked_files_are_the_sessions_users(app: App) -> None:
    seed = app.root / "agent" / "sandbox" / "workspace" / "seed.txt"
    seed.parent.mkdir(parents=True)
    seed.write_text("seeded\n")
    entry = msgspec.structs.replace(
        app.bind("bubblewrap"), workspace_files=["agent/sandbox/workspace/seed.txt"]
    )
    bind_sandbox(app.workspace_root, ROOT_NODE_ID, entry, app_root=app.root)
    store = SessionStore(f"sqlite:///{app.root / 'eve.sqlite'}")
    try:
        source = keeper_for(store, app.workspace_root, ROOT_NODE_ID, "source")
        assert source is not None
        source.open()
        assert (source.directory / "seed.txt").stat().st_uid == command_user("source")
        (source.directory / "notes").mkdir()
        (source.directory / "notes" / "a.txt").write_text("by eve, as root\n")
        source.checkpoint()
        assert store.run(lambda c: copy_head(c, "source", "fork"))
        forked = keeper_for(store, app.workspace_root, ROOT_NODE_ID, "fork")
        assert forked is not None
        forked.open()
    finally:
        store.close()
    owners = {path.stat().st_uid for path in [forked.directory, *forked.directory.rglob("*")]}
    assert owners == {command_user("fork")} and command_user("fork") != command_user("source")
    assert stat.S_IMODE(forked.directory.stat().st_mode) == 0o700
    # the fork's command can change every file eve restored for it
    done = await sandbox_for(app.ctx("fork")).run(
        ["bash", "-c", "echo more >> seed.txt && echo more >> notes/a.txt && rm notes/a.txt"]
    )
    assert done.exit_code == 0, done


def test_an_account_in_the_sessions_range_refuses_the_sandbox(tmp_path: Path) -> None:
    passwd, group = tmp_path / "passwd", tmp_path / "group"
    passwd.write_text("root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534::/:/bin/false\n")
    group.write_text("root:x:0:\n")
    check_session_ids_free(passwd, group)
    group.write_text(f"root:x:0:\nclash:x:{SESSION_UID_BASE + 7}:\n")
    with pytest.raises(SandboxUnavailable, match="'clash' with id 2146435079"):
        check_session_ids_free(passwd, group)
