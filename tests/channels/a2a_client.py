"""The a2a-sdk's client against a channel served in process, and what the tests read with it."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from typing import Any

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.helpers import get_data_parts, get_message_text
from a2a.types import (
    AgentCard,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)

from eve.channels.declaration import ChannelDeclaration
from tests.sessions.inprocess import ROOT, InProcessServer

PATH = "/channels/a2a"
TOKEN = "a2a-test-token-" + "x" * 24
CHANNEL = ChannelDeclaration(name="a2a", kind="a2a", path=PATH)


async def card_of(server: InProcessServer) -> AgentCard:
    """The card as a client resolves it, with no credentials (discovery is public)."""
    async with httpx.AsyncClient(transport=server.async_transport(), timeout=30) as http:
        return await A2ACardResolver(http, ROOT + PATH).get_agent_card()


@asynccontextmanager
async def a2a_client(
    server: InProcessServer, *, token: str | None = TOKEN, streaming: bool = True
) -> AsyncIterator[Client]:
    """The SDK's client as its users make one: the card resolved, then a client from it."""
    headers = {"authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(
        transport=server.async_transport(), headers=headers, timeout=30
    ) as http:
        card = await A2ACardResolver(http, ROOT + PATH).get_agent_card()
        config = ClientConfig(httpx_client=http, streaming=streaming)
        yield ClientFactory(config).create(card)


def text(value: str, *, context_id: str = "", task_id: str = "", **kw: Any) -> SendMessageRequest:
    message = Message(
        message_id=kw.pop("message_id", uuid.uuid4().hex),
        role=Role.ROLE_USER,
        parts=[Part(text=value)] if value else [],
        context_id=context_id,
        task_id=task_id,
    )
    return SendMessageRequest(message=message, **kw)


async def read(
    client: Client, request: SendMessageRequest, *, stop_after: int | None = None
) -> list[StreamResponse]:
    """What a send answers, in order: its whole stream, or its first ``stop_after`` items
    (the connection then dropped)."""
    seen: list[StreamResponse] = []
    async with aclosing(client.send_message(request)) as stream:
        async for item in stream:
            seen.append(item)
            if stop_after is not None and len(seen) >= stop_after:
                break
    return seen


def task_of(items: list[StreamResponse]) -> Task:
    [task] = [i.task for i in items if i.HasField("task")][:1]
    return task


def states(items: list[StreamResponse]) -> list[int]:
    found = [i.task.status.state for i in items if i.HasField("task")][:1]
    return found + [i.status_update.status.state for i in items if i.HasField("status_update")]


def final_state(items: list[StreamResponse]) -> int:
    return states(items)[-1]


def streamed_text(items: list[StreamResponse]) -> str:
    """The text artifacts' chunks as a client appends them."""
    chunks = [i.artifact_update for i in items if i.HasField("artifact_update")]
    return "".join(p.text for c in chunks if c.artifact.name == "text" for p in c.artifact.parts)


def data_of(items: list[StreamResponse], key: str) -> list[Any]:
    """The ``key`` of the data parts of the status messages streamed."""
    found = []
    for item in items:
        if item.HasField("status_update"):
            for data in get_data_parts(list(item.status_update.status.message.parts)):
                if isinstance(data, dict) and key in data:
                    found.append(data[key])
    return found


def answer_of(task: Task) -> str:
    return get_message_text(task.status.message)


COMPLETED = TaskState.TASK_STATE_COMPLETED
INPUT_REQUIRED = TaskState.TASK_STATE_INPUT_REQUIRED
CANCELED = TaskState.TASK_STATE_CANCELED
WORKING = TaskState.TASK_STATE_WORKING
