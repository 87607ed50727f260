"""SIGKILL while a turn's step runs, after its memory save and before the step is recorded:
the recovered turn runs the step again, and the entry is there once (not lost, not twice).

The save and a tool that holds until released are calls of one model response, so they are
one durable step; the server dies while ``hold`` waits, with the save already written. A
real provider asked again answers with new call ids (and maybe another decision): the
second test rewrites the script before the restart so the rerun's save has another call id
and another text, and only the rerun's entry remains.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.conftest import AppFactory, write_files
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import Server, count, script

MEMORY = """
    from eve.memory import define_memory
    default = define_memory(scope="agent")
"""


def _started(root: Path, session: str) -> None:
    deadline = time.monotonic() + 30
    while not (root / f"hold-{session}.started").exists():
        assert time.monotonic() < deadline, "the hold tool never started"
        time.sleep(0.05)


Entries = list[dict[str, Any]]


def _killed_mid_step_and_rerun(
    make_app: AppFactory, text: str, rerun: list[dict[str, Any]] | None = None
) -> tuple[Entries, Entries, Entries]:
    """A step that saves ``text`` and holds; SIGKILL while it holds, then a restart (the
    step's response replaced by the calls ``rerun`` when given: the model asked again).
    What the first run wrote, what remains, and the session's events."""
    saved = call("eve__memory_save", text=text)["tool_calls"]
    step = {"tool_calls": saved + call("hold")["tool_calls"]}
    root = scripted_app(make_app, [step, say("done")], tools=("hold",))
    write_files(root, {"agent/memory.py": MEMORY})
    server = Server(root).start()
    try:
        session = server.create("remember this")
        _started(root, session)
        written = server.get("/memory").json()["memories"]
        assert [m["text"] for m in written] == [text]
        server.kill()
        if rerun is not None:
            script(root, [{"tool_calls": rerun}, say("done")])
        (root / "release").write_text("go")
        server.restart()
        events = server.wait_for(session, count("session.waiting", 1))
        return written, server.get("/memory").json()["memories"], events
    finally:
        server.stop()


def test_a_sigkill_mid_step_neither_loses_nor_duplicates_the_saved_memory(
    make_app: AppFactory,
) -> None:
    written, memories, events = _killed_mid_step_and_rerun(make_app, "the warehouse moved to Leeds")
    assert [m["id"] for m in memories] == [written[0]["id"]]
    # the log may show both runs of the step (the first one's events, if they were flushed
    # before the kill); every run saved the same entry
    saves = [
        e["data"]["output"]
        for e in events
        if e["type"] == "action.result" and e["data"]["name"] == "eve__memory_save"
    ]
    assert saves and all(written[0]["id"] in str(output) for output in saves)


def test_a_rerun_with_new_call_ids_keeps_only_its_own_save(make_app: AppFactory) -> None:
    # the model asked again: the save comes second (call_0_1, not call_0_0), changed
    changed = call("eve__memory_save", text="lunch is at one")["tool_calls"]
    rerun = call("hold")["tool_calls"] + changed
    written, memories, _ = _killed_mid_step_and_rerun(make_app, "lunch is at noon", rerun)
    assert [m["text"] for m in memories] == ["lunch is at one"]
    assert memories[0]["id"] != written[0]["id"]
