"""The ag_ui channel's runs survive what a connection and a server go through: a dropped
connection, a cancel, a restart mid-turn; through ``@ag-ui/client``'s HttpAgent in Node."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.channels.ag_ui import client
from tests.channels.ag_ui.apps import served, thread, user
from tests.channels.ag_ui.client import scenario, types
from tests.channels.ag_ui.loopback import TOKEN, ChannelServer
from tests.sessions.apps import call, say


@pytest.fixture(scope="module", autouse=True)
def _client() -> None:
    client.install()


@pytest.fixture(scope="module")
def holds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChannelServer]:
    """Each session: a call of ``hold`` (it waits for the file ``release``), then an answer."""
    yield from served(tmp_path_factory, "holds", [call("hold"), say("released")], ("hold",))


def test_a_dropped_connection_resumes_from_the_log(holds: ChannelServer) -> None:
    (holds.app_root / "release").unlink(missing_ok=True)
    result = client.run(
        scenario(
            holds.channel_url,
            thread(),
            [
                {"message": user("hold on"), "abortOn": "TOOL_CALL_START"},
                # the same conversation again (what a client retries with), once released
                {"touch": str(holds.app_root / "release")},
            ],
            token=TOKEN,
        )
    )
    dropped, resumed = result["runs"]
    # the client stopped reading at its abort, mid-turn: no end of the run reached it
    assert "TOOL_CALL_START" in types(dropped["events"])
    assert "TOOL_CALL_RESULT" not in types(dropped["events"])
    assert types(dropped["events"])[-1] == "RUN_ERROR", dropped
    assert dropped["events"][-1]["code"] == "abort"
    assert types(resumed["events"])[:3] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "STEP_STARTED"]
    assert types(resumed["events"])[-2:] == ["STATE_SNAPSHOT", "RUN_FINISHED"]
    [snapshot] = [e["messages"] for e in resumed["events"] if e["type"] == "MESSAGES_SNAPSHOT"]
    assert [(m["role"], m["content"]) for m in snapshot] == [("user", "hold on")]
    # one call, run once: the second request continued the first turn, it sent nothing
    results = [e["content"] for e in resumed["events"] if e["type"] == "TOOL_CALL_RESULT"]
    assert results == ["released"]
    assert resumed["events"][-1]["threadId"] == dropped["events"][0]["threadId"]
    assert [m["content"] for m in result["messages"] if m["role"] == "user"] == ["hold on"]


def test_a_cancel_ends_the_run_as_cancelled(holds: ChannelServer) -> None:
    (holds.app_root / "release").unlink(missing_ok=True)
    result = client.run(
        scenario(
            holds.channel_url,
            thread(),
            [{"message": user("hold on"), "cancelOn": "TOOL_CALL_END"}],
            token=TOKEN,
        )
    )
    [cancelled] = result["runs"]
    assert cancelled["cancelAnswer"] == {"ok": True, "cancelled": True}
    assert cancelled["error"] is None, cancelled
    assert types(cancelled["events"])[-1] == "RUN_FINISHED"
    assert cancelled["events"][-1]["outcome"] == {"type": "cancelled"}


def _await_new_hold(root: Path, before: set[Path], running: subprocess.Popen[str]) -> None:
    """Until the client's turn is inside ``hold`` (its marker file appears)."""
    deadline = time.monotonic() + 30
    while not set(root.glob("hold-*.started")) - before:
        assert running.poll() is None, running.communicate()
        assert time.monotonic() < deadline, "the turn never reached its tool"
        time.sleep(0.02)


def test_a_turn_survives_a_server_restart(holds: ChannelServer) -> None:
    (holds.app_root / "release").unlink(missing_ok=True)
    thread_id, message = thread(), user("hold on")
    running = client.start(
        scenario(holds.channel_url, thread_id, [{"message": message}], token=TOKEN)
    )
    before = set(holds.app_root.glob("hold-*.started"))
    _await_new_hold(holds.app_root, before, running)
    holds.stop()  # the tool is running: its turn is left mid-step
    [cut] = client.finish(running, cut=True)["runs"]
    assert "RUN_FINISHED" not in types(cut["events"]) and cut["error"] is not None
    holds.start()
    (holds.app_root / "release").write_text("yes")
    # the client posts its conversation again to the restarted server
    result = client.run(
        scenario(
            holds.channel_url, thread_id, [{}], token=TOKEN, messages=[{"role": "user", **message}]
        )
    )
    [resumed] = result["runs"]
    assert resumed["error"] is None, resumed
    assert [e["content"] for e in resumed["events"] if e["type"] == "TOOL_CALL_RESULT"] == [
        "released"
    ]
    said = "".join(e["delta"] for e in resumed["events"] if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert said == "released"
    assert types(resumed["events"])[-1] == "RUN_FINISHED"
