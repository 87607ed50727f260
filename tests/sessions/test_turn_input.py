"""A turn's durable input: the message's parts, and the plain string queued by an earlier eve.

The turn runs in a process of its own (DBOS is process-wide state), from a session database
in which the test queues the turn the way an eve from before content parts did.
"""

from __future__ import annotations

import json
import sys

from eve.messages import ImagePart, TextPart, user_message
from eve.sessions.turn_workflow import message_of, turn_input
from tests import forked
from tests.conftest import AppFactory

QUEUE_AND_RUN = """
import asyncio, json, sys
from pathlib import Path
from eve.cli.agent_setup import prepare
from eve.sessions import SessionService, resolve_settings

async def main(root: Path) -> None:
    setup = await prepare(root, model=None, max_turns=None)
    service = SessionService(setup, resolve_settings(root, env={}))
    await service.start()
    try:
        session = (await service.create()).session_id
        def enqueue(connection, turn):
            service.engine.enqueue_turn(session, turn, "queued before parts")

        await asyncio.to_thread(service.store.claim_turn, session, enqueue)
        async for line in await service.events(session, 0, follow=True):
            if line:
                print(line, flush=True)
                if json.loads(line)["type"] == "session.waiting":
                    return
    finally:
        await service.stop()

asyncio.run(main(Path(sys.argv[1])))
"""


def test_a_turn_queued_with_a_plain_string_still_runs(make_app: AppFactory) -> None:
    root = make_app()
    done = forked.run(  # a process of its own, forked: eve's imports are a second of CPU
        [sys.executable, "-c", QUEUE_AND_RUN, str(root)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    by_type = {e["type"]: e["data"] for e in events}
    assert by_type["message.received"] == {
        "session_id": by_type["session.started"]["session_id"],
        "turn_id": "turn_0",
        "message": "queued before parts",
    }
    assert by_type["message.completed"]["message"] == "(offline/test) You said: queued before parts"


def test_a_turn_input_is_plain_data_that_reads_back_as_the_message() -> None:
    message = user_message("look", [ImagePart(media_type="image/png", data=b"\x89PNG")])
    stored = turn_input(message)
    assert stored == [
        {"type": "text", "text": "look"},
        {"type": "image", "media_type": "image/png", "data": "iVBORw=="},
    ]
    assert message_of(stored) == message
    assert message_of("before parts").parts == [TextPart(text="before parts")]
