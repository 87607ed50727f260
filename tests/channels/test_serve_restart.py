"""A channel across a real ``eve serve`` restart: the agent's ``agent/channels/`` declares
an A2A channel, a turn parks in a tool that blocks, the server process is SIGKILLed (no
shutdown code runs) and started again on the same database, and the ``a2a-sdk`` client that
subscribes to its task again reads the turn to its end."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types import SubscribeToTaskRequest

from tests.channels.a2a_client import COMPLETED, WORKING, final_state, read, streamed_text, text
from tests.conftest import AppFactory, wait_for_file
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import Server, count

TOKEN = "serve-restart-token-" + "x" * 24
CHANNEL = "from eve.channels import a2a\ndefault = a2a()\n"


@asynccontextmanager
async def client_of(server: Server) -> AsyncIterator[Client]:
    """The SDK's client of the served channel, over a real socket, as its users make one."""
    headers = {"authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:
        url = f"http://127.0.0.1:{server.port}/channels/agents"
        card = await A2ACardResolver(http, url).get_agent_card()
        yield ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)


async def test_an_a2a_task_survives_a_sigkill_of_eve_serve(make_app: AppFactory) -> None:
    root = scripted_app(make_app, [call("hold"), say("held on")], tools=("hold",))
    (root / "agent/channels").mkdir()
    (root / "agent/channels/agents.py").write_text(CHANNEL, encoding="utf-8")
    server = Server(root, env={"EVE_API_TOKEN": TOKEN}, token=TOKEN)
    await asyncio.to_thread(server.start)
    try:
        async with client_of(server) as client:
            [first] = await read(client, text("hold on"), stop_after=1)
        task_id, session = first.task.id, first.task.context_id
        started = root / f"hold-{session}.started"
        await asyncio.to_thread(wait_for_file, started)
        # killed once the log tells the turn's start (a step does not wait for its events'
        # write): the task a client sees then is a working one, which the restart must keep
        await asyncio.to_thread(server.wait_for, session, count("step.started"))
        await asyncio.to_thread(server.kill)
        started.unlink()
        await asyncio.to_thread(server.start)
        async with client_of(server) as client:
            stream = client.subscribe(SubscribeToTaskRequest(id=task_id))
            async with aclosing(stream):
                seen = [await anext(stream)]
                assert seen[0].task.status.state == WORKING
                # the recovered turn runs the tool again from its start; let it finish
                await asyncio.to_thread(wait_for_file, started)
                (root / "release").write_text("go")
                seen += [item async for item in stream]
    finally:
        log = await asyncio.to_thread(server.stop)
    assert "channel agents (a2a)" in log
    assert final_state(seen) == COMPLETED
    assert streamed_text(seen) == "held on"
    assert [m.parts[0].text for m in seen[0].task.history] == ["hold on"]
