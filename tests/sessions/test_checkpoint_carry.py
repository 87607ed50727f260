"""A turn starts from the checkpoint its session's last turn here saved, kept decoded, only
while that is exactly the text the store holds; otherwise it decodes as before."""

from __future__ import annotations

import os

import msgspec
import pytest

from eve.messages import AssistantMessage, TextPart, user_message
from eve.sessions.checkpoint import SessionCheckpoint, decode_checkpoint, encode_checkpoint
from eve.sessions.checkpoint_carry import CarriedCheckpoints
from eve.sessions.store import CheckpointSave, StartingCheckpoint
from eve.sessions.turn_workflow import current_runtime
from tests.conftest import AppFactory
from tests.sessions.apps import say, scripted_app
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer


def _checkpoint(text: str, turns: int = 1) -> SessionCheckpoint:
    reply = AssistantMessage(parts=[TextPart(text="ok")])
    return SessionCheckpoint(messages=[user_message(text), reply], turns=turns)


def _save(session_id: str, version: int, checkpoint: SessionCheckpoint) -> CheckpointSave:
    data = encode_checkpoint(checkpoint)
    return CheckpointSave(session_id=session_id, version=version, data=data, saved_by="wf")


def _start(save: CheckpointSave) -> StartingCheckpoint:
    return StartingCheckpoint(version=save.version, data=save.data)


def test_a_kept_checkpoint_is_taken_once_for_the_text_it_was_saved_as() -> None:
    carried = CarriedCheckpoints()
    checkpoint = _checkpoint("hello")
    save = _save("ses_a", 3, checkpoint)
    carried.keep(save, checkpoint)
    assert carried.take("ses_a", _start(save)) is checkpoint
    # taken out: the turn that took it may change it, and may fail
    assert carried.take("ses_a", _start(save)) is None
    assert (carried.taken, carried.decoded) == (1, 1)


@pytest.mark.parametrize(
    "start",
    [
        # another worker's save, a reset, or a replay that starts from the version before
        StartingCheckpoint(version=4, data=None),
        StartingCheckpoint(version=2, data='{"turns":1}'),
        # the same version with other text: never taken for it
        StartingCheckpoint(version=3, data='{"turns":9}'),
    ],
)
def test_a_kept_checkpoint_is_not_taken_for_another_version_or_text(
    start: StartingCheckpoint,
) -> None:
    carried = CarriedCheckpoints()
    checkpoint = _checkpoint("hello")
    carried.keep(_save("ses_a", 3, checkpoint), checkpoint)
    assert carried.take("ses_a", start) is None
    assert carried.take("ses_b", StartingCheckpoint(version=3, data=None)) is None
    assert carried.decoded == 2 and carried.taken == 0


def test_a_redacted_checkpoint_is_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    # the stored text is not the object's own encoding: the next turn reads it redacted
    monkeypatch.setenv("OPENAI_API_KEY", "carry-secret-value-0123456789")
    carried = CarriedCheckpoints()
    checkpoint = _checkpoint(f"the key is {os.environ['OPENAI_API_KEY']}")
    save = _save("ses_a", 1, checkpoint)
    assert save.data is not None and "carry-secret-value" not in save.data
    carried.keep(save, checkpoint)
    assert carried.take("ses_a", _start(save)) is None
    # nor one whose history already held a redaction's mark
    marked = decode_checkpoint(save.data)
    again = _save("ses_a", 2, marked)
    carried.keep(again, marked)
    assert carried.take("ses_a", _start(again)) is None


def test_what_is_kept_is_bounded_by_the_stored_text_the_oldest_going_first() -> None:
    saves = {sid: _save(sid, 1, _checkpoint(sid)) for sid in ("ses_a", "ses_b", "ses_c")}
    sizes = {sid: len(save.data or "") for sid, save in saves.items()}
    carried = CarriedCheckpoints(most_chars=sizes["ses_b"] + sizes["ses_c"])
    for sid, save in saves.items():
        carried.keep(save, _checkpoint(sid))
    assert carried.take("ses_a", _start(saves["ses_a"])) is None
    assert carried.take("ses_b", _start(saves["ses_b"])) is not None
    assert carried.take("ses_c", _start(saves["ses_c"])) is not None
    # a checkpoint larger than the bound alone is not kept
    small = CarriedCheckpoints(most_chars=sizes["ses_a"] - 1)
    small.keep(saves["ses_a"], _checkpoint("ses_a"))
    assert small.take("ses_a", _start(saves["ses_a"])) is None


def test_each_turn_after_the_first_starts_from_the_checkpoint_the_one_before_saved(
    make_app: AppFactory,
) -> None:
    root = scripted_app(make_app, [say("one"), say("two"), say("three")])
    server = InProcessServer(root).start()
    try:
        session = server.create("first")
        server.wait_for(session, count("session.waiting"))
        for turn, text in enumerate(("second", "third"), start=2):
            assert server.send(session, text).status_code == 202
            server.wait_for(session, count("session.waiting", turn))
        carried = current_runtime().carried
        store = current_runtime().store
        # the first turn started from no checkpoint; the others from what the one before kept
        assert (carried.taken, carried.decoded) == (2, 1)
        saved = decode_checkpoint(store.load_checkpoint(session))
        # what the last turn built from the kept checkpoints is what decoding would have
        assert saved.turns == 3
        texts = [msgspec.to_builtins(m)["parts"][0]["text"] for m in saved.messages]
        assert texts == ["first", "one", "second", "two", "third", "three"]
    finally:
        server.stop()
