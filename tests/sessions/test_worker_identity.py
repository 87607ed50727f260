"""Two processes under one worker id on one database: the second must not take the first's
turns while the first is alive (DBOS recovers a pending workflow by its executor id at launch,
and eve's heartbeats could not tell the two apart). It refuses to start, saying to set
``EVE_WORKER_ID``; the first finishes its turn alone."""

from __future__ import annotations

import pytest

from tests.conftest import AppFactory, wait_for_file
from tests.sessions.harness import Server, count, types
from tests.sessions.test_crash_recovery import crash_app
from tests.sessions.test_postgres import hold_turn, release_slow


def test_a_second_process_under_a_live_workers_id_refuses_to_start(make_app: AppFactory) -> None:
    root = crash_app(make_app)
    a = Server(root, env={"EVE_WORKER_ID": "same"})
    b = Server(root, env={"EVE_WORKER_ID": "same"})
    a.start()
    try:
        session, holder = hold_turn(a)
        (root / "slow.started").unlink()
        try:
            b.start()
        except AssertionError as exited:
            refusal = str(exited)
        else:
            # the old behaviour: b's DBOS recovered a's pending turn and runs it a second time
            wait_for_file(root / "slow.started")
            pytest.fail(f"pid {(root / 'slow.started').read_text()} ran the live worker's turn")
        assert b.proc is not None and b.proc.returncode == 2, refusal
        assert "worker id same-0 is held by a live process" in refusal, refusal
        assert "EVE_WORKER_ID" in refusal, refusal
        release_slow(root)
        events = a.wait_for(session, count("session.waiting"), timeout=30)
    finally:
        log = a.stop()
    assert types(events).count("turn.completed") == 1, log
    assert [int(pid) for pid in (root / "slow.log").read_text().split()] == [holder], log
