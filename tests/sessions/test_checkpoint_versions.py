"""Checkpoints by version: a save keeps the version a replay may start from, a replayed
save writes the same version, an old database's checkpoint still loads, and a turn killed
right after its save recovers from the checkpoint its first run loaded."""

from __future__ import annotations

import contextlib
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from eve.errors import CheckpointMissing
from eve.sessions.listing import list_sessions
from eve.sessions.store import SessionStore
from eve.sessions.tables import checkpoints, sessions
from tests.conftest import AppFactory
from tests.sessions.apps import say, scripted_app
from tests.sessions.harness import Server, assert_dense, count, types


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    made = SessionStore(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    made.create_session("ses_a")
    return made


def _versions(store: SessionStore) -> list[int]:
    return store.run(
        lambda c: [
            row[0] for row in c.execute(sa.select(checkpoints.c.version).order_by("version"))
        ]
    )


def test_a_save_keeps_the_version_before_it_and_drops_older_ones(store: SessionStore) -> None:
    assert store.checkpoint_version("ses_a") == 0 and store.checkpoint_at("ses_a", 0) is None
    for turns in (1, 2, 3):
        saved = store.save_checkpoint("ses_a", f'{{"turns":{turns}}}', after=turns - 1)
        assert saved == turns
    assert _versions(store) == [2, 3]
    assert store.checkpoint_version("ses_a") == 3
    assert store.checkpoint_at("ses_a", 2) == '{"turns":2}'
    with pytest.raises(CheckpointMissing) as missing:
        store.checkpoint_at("ses_a", 1)
    assert (missing.value.session_id, missing.value.version) == ("ses_a", 1)
    assert "reset the session" in str(missing.value)
    # a save replayed after a crash writes its version again, not one more
    assert store.save_checkpoint("ses_a", '{"turns":3}', after=2) == 3
    assert _versions(store) == [2, 3] and store.load_checkpoint("ses_a") == '{"turns":3}'
    # a reset clears: a version of its own with no checkpoint, after the current one
    assert store.save_checkpoint("ses_a", None) == 4
    assert store.load_checkpoint("ses_a") is None and _versions(store) == [3, 4]


def test_a_save_writes_over_the_row_two_versions_back_unless_its_own_is_there(
    either_store: SessionStore,
) -> None:
    store = either_store
    store.create_session("ses_a")
    for turns in (1, 2, 3):
        store.save_checkpoint("ses_a", f'{{"turns":{turns}}}', after=turns - 1)
    if store.engine.dialect.name == "sqlite":
        rows = sa.text("SELECT rowid, version FROM eve_checkpoints ORDER BY version")
        # version 3 took version 1's row: one write, no row dropped and another made
        assert store.run(lambda c: [tuple(row) for row in c.execute(rows)]) == [(2, 2), (1, 3)]
    assert _versions(store) == [2, 3] and store.checkpoint_at("ses_a", 3) == '{"turns":3}'
    # a save of version 1 again (a replay from long ago) leaves 1, 2 and 3; saving 3 once
    # more must not make 1 into a second 3, but drop it and write 3 over
    store.save_checkpoint("ses_a", '{"turns":1}', after=0)
    assert _versions(store) == [1, 2, 3]
    assert store.save_checkpoint("ses_a", '{"turns":33}', after=2) == 3
    assert _versions(store) == [2, 3] and store.load_checkpoint("ses_a") == '{"turns":33}'


def test_a_checkpoint_an_older_eve_kept_in_the_session_row_still_loads(
    store: SessionStore,
) -> None:
    legacy = '{"turns":7,"messages":[]}'
    store.run(
        lambda c: c.execute(
            sessions.update().where(sessions.c.id == "ses_a").values(checkpoint=legacy)
        )
    )
    assert store.load_checkpoint("ses_a") == legacy
    [entry] = store.run(lambda c: list_sessions(c, limit=5, cursor=None)).sessions
    assert entry.turns == 7
    # the first turn after the upgrade loads it as version 1, and the row's copy goes
    assert store.checkpoint_version("ses_a") == 1
    assert store.checkpoint_at("ses_a", 1) == legacy
    row = store.run(
        lambda c: c.execute(sa.select(sessions.c.checkpoint).where(sessions.c.id == "ses_a"))
    ).scalar()
    assert row is None and store.load_checkpoint("ses_a") == legacy


#: kills its own process (SIGKILL) right after a checkpoint save commits, once armed: the
#: save is durable but DBOS never recorded the turn's end, so the recovered turn must not
#: start from it. A turn saves with its last events (``append_events`` with riders), a
#: save that must be a step alone (``save_checkpoint``)
CRASH_AFTER_SAVE = """
    import os
    import signal
    from pathlib import Path

    from eve.hooks import define_hook
    from eve.sessions.store import SessionStore

    _save = SessionStore.save_checkpoint
    _append = SessionStore.append_events

    def die_if_armed(first_index=None):
        armed = Path("crash.armed")
        if armed.exists():
            # it holds the log's length when the test armed it, after the first turn: that
            # turn's last write (seen by the test before its thread came to this check) is
            # not the one to die in
            if first_index is not None and first_index < int(armed.read_text()):
                return
            armed.unlink()
            os.kill(os.getpid(), signal.SIGKILL)

    def save_then_die(self, *args, **kwargs):
        version = _save(self, *args, **kwargs)
        die_if_armed()
        return version

    def append_then_die(self, session_id, first_index, rows, also=()):
        results = _append(self, session_id, first_index, rows, also)
        if also:
            die_if_armed(first_index)
        return results

    SessionStore.save_checkpoint = save_then_die
    SessionStore.append_events = append_then_die

    default = define_hook(events={"turn.started": lambda event: None})
"""


def test_a_turn_killed_after_its_save_recovers_from_what_it_first_loaded(
    make_app: AppFactory,
) -> None:
    root = scripted_app(make_app, [say("one"), say("two"), say("three")])
    (root / "agent/hooks").mkdir()
    (root / "agent/hooks/crash_after_save.py").write_text(
        "\n".join(line.removeprefix("    ") for line in CRASH_AFTER_SAVE.splitlines())
    )
    server = Server(root).start()
    try:
        session = server.create("first")
        first = server.wait_for(session, count("session.waiting"))
        (root / "crash.armed").write_text(str(len(first)))
        # (the turn's save may come before the answer: the message was taken all the
        # same, which the turns below show)
        with contextlib.suppress(httpx.TransportError):
            assert server.send(session, "second").status_code == 202
        assert server.proc is not None
        server.proc.wait(60)  # it died in the turn's save
        assert not (root / "crash.armed").exists()
        server.start()  # the same worker: DBOS recovers the turn
        server.wait_for(session, count("session.waiting", 2))
        assert server.send(session, "third").status_code == 202
        events = server.wait_for(session, count("session.waiting", 3))
        summary = server.get(f"/session/{session}").json()
    finally:
        log = server.stop()
    assert_dense(events)
    assert types(events).count("turn.completed") == 3, log
    # the script answers by the history's length: a replay from the saved checkpoint
    # (the turn's messages twice) would have skipped "three"
    said = [e["data"]["message"] for e in events if e["type"] == "message.completed"]
    assert said == ["one", "two", "three"]
    assert summary["turns"] == 3
