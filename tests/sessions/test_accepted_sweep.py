"""The sweep of accepted turns: a turn whose workflow ended with no outcome runs again in its
place, or, when a later turn overtook it, fails visibly with ``TurnLost`` (accepted_sweep.py).

The workflow ends the way nothing of eve's would end it: cancelled in DBOS before it starts,
while its place waits behind a turn that holds the session.
"""

from __future__ import annotations

import time
from pathlib import Path

import sqlalchemy as sa
from dbos import DBOS, EnqueueOptions

from eve.sessions.accepted import (
    OPENING,
    RERUN_MARK,
    accept,
    cursor_of,
    drop_rowless,
    finish,
    unfinished,
)
from eve.sessions.accepted_sweep import MAX_RERUNS
from eve.sessions.store import SessionStore
from eve.sessions.tables import accepted_places, sessions
from eve.sessions.turn_workflow import TURN_WORKFLOW
from tests.conftest import AppFactory, wait_for_file
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import Event, assert_dense, count
from tests.sessions.inprocess import InProcessServer
from tests.sessions.principals import on_service

FAST = {"EVE_WORKER_TIMEOUT": "1"}


def held_app(make_app: AppFactory) -> Path:
    return scripted_app(
        make_app, [call("hold"), say("held"), say("one"), say("two")], tools=("hold",)
    )


def outcomes(events: list[Event]) -> list[tuple[str, str]]:
    ends = ("turn.completed", "turn.failed")
    return [(e["data"]["turn_id"], e["type"]) for e in events if e["type"] in ends]


def cancelled_before_it_starts(workflow_id: str) -> None:
    """DBOS holds ``workflow_id`` cancelled: when its place may start, DBOS answers the start
    with that workflow, ended and never run. (On a queue no worker polls: a place waiting
    behind another is not DBOS's yet, ``accepted.py``.)"""
    options: EnqueueOptions = {
        "workflow_name": TURN_WORKFLOW,
        "queue_name": "tests-unpolled",
        "workflow_id": workflow_id,
    }
    DBOS.enqueue_workflow_with_options(options, "", 0, "")
    DBOS.cancel_workflow(workflow_id)


def test_a_turn_whose_workflow_ended_unanswered_runs_again_in_its_place(
    make_app: AppFactory,
) -> None:
    root = held_app(make_app)
    server = InProcessServer(root, env=FAST).start()
    try:
        session = server.create("first")
        wait_for_file(root / f"hold-{session}.started")
        assert server.send(session, "second").json()["turnId"] == "turn_1"
        cancelled_before_it_starts(f"{session}:turn-1")  # ended, and nothing in the log says so
        (root / "release").write_text("go")
        server.wait_for(session, count("session.waiting", 2))
        follow_up = server.send(session, "third")
        assert follow_up.json()["turnId"] == "turn_2"  # not misnumbered
        events = server.wait_for(session, count("session.waiting", 3))
    finally:
        log = server.stop()
    assert_dense(events)
    assert outcomes(events) == [
        ("turn_0", "turn.completed"),
        ("turn_1", "turn.completed"),
        ("turn_2", "turn.completed"),
    ]
    received = [e["data"]["message"] for e in events if e["type"] == "message.received"]
    assert received == ["first", "second", "third"]
    assert f"running it again as {session}:turn-1.rerun-1" in log, log


def test_a_turn_whose_runs_keep_ending_unanswered_fails_visibly(make_app: AppFactory) -> None:
    """A later place no longer overtakes an earlier one (it starts once the earlier one is
    done, ``accepted.py``), so what fails a turn visibly is running out of reruns."""
    root = held_app(make_app)
    server = InProcessServer(root, env=FAST).start()
    try:
        session = server.create("first")
        wait_for_file(root / f"hold-{session}.started")
        server.send(session, "second")
        server.send(session, "third")
        turn = f"{session}:turn-1"
        for workflow_id in (turn, *(f"{turn}{RERUN_MARK}{n}" for n in range(1, MAX_RERUNS + 1))):
            cancelled_before_it_starts(workflow_id)
        (root / "release").write_text("go")
        events = server.wait_for(session, count("session.waiting", 3))
    finally:
        server.stop()
    assert_dense(events)
    # turn_1 ran out of reruns; turn_2 ran once turn_1's place was settled
    assert sorted(outcomes(events)) == [
        ("turn_0", "turn.completed"),
        ("turn_1", "turn.failed"),
        ("turn_2", "turn.completed"),
    ]
    [failed] = [e["data"] for e in events if e["type"] == "turn.failed"]
    assert failed["error"].startswith("TurnLost: turn_1 of session "), failed
    received = [e["data"]["message"] for e in events if e["type"] == "message.received"]
    assert received == ["first", "third"]


def accept_turns(store: SessionStore, sessions: tuple[str, ...], turns: int) -> None:
    """Sessions with ``turns`` accepted places each, none delivered (``<id>:turn-<n>``)."""
    for session in sessions:
        store.create_session(session)
        for turn in range(turns):
            store.run(
                lambda c, s=session, t=turn: accept(
                    c, session_id=s, turn=t, kind="turn", workflow_id=f"{s}:turn-{t}"
                )
            )


def test_a_sweep_pages_through_every_unfinished_place(tmp_path: Path) -> None:
    store = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    accept_turns(store, ("ses_a", "ses_b"), 3)
    store.run(lambda c: finish(c, "ses_a:turn-1"))
    seen: list[tuple[str, int]] = []
    after = None
    while True:
        page = store.run(
            lambda c, a=after: unfinished(c, accepted_before=time.time() + 1, after=a, limit=2)
        )
        seen += [(p.session_id, p.turn) for p in page]
        if len(page) < 2:
            break
        after = cursor_of(page[-1])
    store.close()
    assert sorted(seen) == [
        ("ses_a", 0),
        ("ses_a", 2),
        ("ses_b", 0),
        ("ses_b", 1),
        ("ses_b", 2),
    ]


def test_only_the_places_of_a_session_with_no_row_are_dropped(
    either_store: SessionStore,
) -> None:
    accept_turns(either_store, ("ses_kept", "ses_gone"), 2)
    gone = sessions.delete().where(sessions.c.id == "ses_gone")  # by hand: eve never does
    either_store.run(lambda c: c.execute(gone))
    assert either_store.run(lambda c: drop_rowless(c, "ses_kept")) == []
    assert either_store.run(lambda c: drop_rowless(c, "ses_gone")) == [0, 1]
    query = sa.select(accepted_places.c.session_id, accepted_places.c.state)
    states = sorted(either_store.read(lambda c: c.execute(query).all()))
    assert states == [("ses_gone", "done")] * 2 + [("ses_kept", "accepted")] * 2


def test_an_opening_place_whose_session_has_no_row_is_marked_done_once(
    make_app: AppFactory,
) -> None:
    """A first turn waiting for its session's open, the session's row deleted by hand: the
    sweep has no open to finish. Its places nothing runs are marked done with a warning the
    first time, not offered to every sweep after."""
    server = InProcessServer(scripted_app(make_app, [say("one")])).start()
    try:
        service = server._client().app.state.service  # type: ignore[attr-defined]
        store, sweep = service.store, service.engine.sweep
        long_ago = time.time() - 60
        for turn, state in ((0, OPENING), (1, "accepted")):
            row = {"session_id": "ses_gone", "turn": turn, "kind": "turn", "state": state}
            row |= {"workflow_id": f"ses_gone:turn-{turn}", "reruns": 0, "accepted_at": long_ago}
            store.run(lambda c, r=row: c.execute(accepted_places.insert(), r))
        offered: list[str] = []
        finish_open = sweep.finish_open

        async def counted(session_id: str) -> bool:
            offered.append(session_id)
            return bool(await finish_open(session_id))

        sweep.finish_open = counted
        for _ in range(2):
            on_service(server, lambda _s: sweep.run())
        states = store.read(
            lambda c: c.execute(
                sa.select(accepted_places.c.turn, accepted_places.c.state).where(
                    accepted_places.c.session_id == "ses_gone"
                )
            ).all()
        )
    finally:
        log = server.stop()
    assert sorted(states) == [(0, "done"), (1, "done")]
    assert offered == ["ses_gone"]
    warning = "session ses_gone has no row (deleted?): its turns turn_0, turn_1, accepted"
    assert log.count(warning) == 1, log
