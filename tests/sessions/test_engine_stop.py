"""A worker that stops with turns running ends them before DBOS goes; a restart finishes them."""

from __future__ import annotations

import textwrap

import sqlalchemy as sa

from eve.sessions.store import SessionStore
from eve.sessions.tables import workers
from tests.conftest import AppFactory, wait_for_file
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import count, types
from tests.sessions.inprocess import InProcessServer

#: a tool that holds until "release" exists, and says whether DBOS was still there when
#: the stop cancelled it
WAIT_OUT = '''
    import asyncio
    from pathlib import Path
    from eve.tools import ToolContext, tool

    @tool
    async def wait_out(ctx: ToolContext) -> str:
        """Wait until the test writes the file "release"."""
        Path(f"wait-{ctx.session_id}.started").write_text("yes")
        try:
            while not Path("release").exists():
                await asyncio.sleep(0.05)
        except asyncio.CancelledError:
            import dbos._dbos as launched
            alive = launched._dbos_global_instance is not None
            Path(f"wait-{ctx.session_id}.cancelled").write_text(str(alive))
            raise
        return "released"
'''


def test_a_stop_mid_turn_ends_the_turns_before_dbos_and_a_restart_finishes_them(
    make_app: AppFactory,
) -> None:
    """At 1,000 sessions a stop logged a thousand 'System database accessed before DBOS was
    launched': DBOS went while turns still ran on the loop, and they met its absence at
    their next step."""
    root = scripted_app(make_app, [call("wait_out"), say("held")] * 2)
    (root / "agent/tools").mkdir(exist_ok=True)
    (root / "agent/tools/wait_out.py").write_text(textwrap.dedent(WAIT_OUT))
    server = InProcessServer(root).start()
    try:
        sessions = [server.create("first") for _ in range(2)]
        for session in sessions:
            wait_for_file(root / f"wait-{session}.started")
    finally:
        server.stop()
    for session in sessions:
        # cancelled while DBOS still ran: the step it was in records nothing, and resumes
        assert (root / f"wait-{session}.cancelled").read_text() == "True"
    (root / "release").write_text("go")
    server = InProcessServer(root).start()
    try:
        logs = [server.wait_for(s, count("session.waiting")) for s in sessions]
    finally:
        server.stop()
    for events in logs:
        assert types(events).count("turn.completed") == 1


def test_a_clean_stop_releases_its_worker_id(make_app: AppFactory) -> None:
    """The release runs after DBOS.destroy, which shuts the loop's default executor down: a
    release through ``asyncio.to_thread`` failed with RuntimeError and kept the id held."""
    root = scripted_app(make_app, [say("hi")])
    server = InProcessServer(root).start()
    try:
        server.wait_for(server.create("hello"), count("session.waiting"))
    finally:
        server.stop()
    store = SessionStore(f"sqlite:///{root / '.eve/sessions/eve.sqlite'}")
    try:
        rows = store.read(lambda c: c.execute(sa.select(workers.c.holder)).all())
    finally:
        store.engine.dispose()
    assert rows, "the worker had a row"
    assert [holder for (holder,) in rows] == [None] * len(rows)
