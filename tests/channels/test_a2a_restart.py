"""A restart of the server mid-turn loses nothing an A2A client can see: the task it
subscribes to again, on the new server, runs to its end."""

from __future__ import annotations

import asyncio
from contextlib import aclosing
from pathlib import Path

from a2a.types import SubscribeToTaskRequest

from tests.channels.a2a_client import (
    CHANNEL,
    COMPLETED,
    WORKING,
    a2a_client,
    card_of,
    final_state,
    read,
    streamed_text,
    text,
)
from tests.conftest import AppFactory, wait_for_file
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.inprocess import InProcessServer


async def test_a_task_running_across_a_restart_ends_for_the_client_that_subscribes_again(
    make_app: AppFactory,
) -> None:
    root = scripted_app(make_app, [call("hold"), say("held on")], tools=("hold",))
    server = InProcessServer(root, channels=[CHANNEL])
    await asyncio.to_thread(server.start)
    try:
        # a server without a token declares no scheme on its card
        assert not (await card_of(server)).security_schemes
        async with a2a_client(server, token=None) as client:
            [first] = await read(client, text("hold on"), stop_after=1)
        task_id, session = first.task.id, first.task.context_id
        await asyncio.to_thread(wait_for_file, root / f"hold-{session}.started")
        await asyncio.to_thread(server.stop)
        (root / f"hold-{session}.started").unlink()
        await asyncio.to_thread(server.start)
        async with a2a_client(server, token=None) as client:
            stream = client.subscribe(SubscribeToTaskRequest(id=task_id))
            async with aclosing(stream):
                seen = [await anext(stream)]
                assert seen[0].task.status.state == WORKING
                # the tool runs again from its start on the new server; let it finish
                await asyncio.to_thread(wait_for_file, root / f"hold-{session}.started")
                Path(root / "release").write_text("go")
                seen += [item async for item in stream]
    finally:
        await asyncio.to_thread(server.stop)
    assert final_state(seen) == COMPLETED
    assert seen[-1].status_update.status.message.parts[0].text == "held on"
    assert streamed_text(seen) == "held on"
    assert [m.parts[0].text for m in seen[0].task.history] == ["hold on"]
