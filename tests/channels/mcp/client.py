"""The ``mcp`` SDK's client (``streamable_http_client`` + ``ClientSession``) talking to an
``InProcessServer``: its ``httpx2`` client sends each request through the server's
``TestClient``, so no port opens and the app keeps running on the loop its lifespan
started. A response is a live stream (progress arrives as it is sent), and closing it is a
dropped connection: the app's request is cancelled, as a server's is when its client goes.
Requests find the server's current ``TestClient``, so a client outlives a restart."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from eve.channels.declaration import ChannelDeclaration
from eve.compiler import compile_to_disk
from tests.conftest import write_files
from tests.sessions.apps import scripted_app
from tests.sessions.inprocess import ROOT, InProcessServer

PATH = "/channels/agent"
TOKEN = "mcp-channel-test-token"
CHANNEL = ChannelDeclaration(
    name="agent", kind="mcp", path=PATH, options={"wait_seconds": 10, "max_wait_seconds": 20}
)


def scripted(root: Path, responses: list[dict[str, Any]], *, tools: tuple[str, ...] = ()) -> Path:
    """The scripted agent of ``tests.sessions.apps`` at ``root``, compiled."""

    def written(files: dict[str, str], *, minimal: bool, new_database: bool) -> Path:
        # root is the caller's own: a new app, whatever is asked (tests/session_files.py)
        root.mkdir()
        write_files(root, files)
        return root

    scripted_app(written, responses, tools=tools)
    compile_to_disk(root)
    return root


def served(
    root: Path, responses: list[dict[str, Any]], *, tools: tuple[str, ...] = ()
) -> InProcessServer:
    """The scripted agent at ``root``, served in process with the channel."""
    scripted(root, responses, tools=tools)
    env = {"EVE_API_TOKEN": TOKEN}
    return InProcessServer(root, env=env, token=TOKEN, channels=[CHANNEL]).start()


async def sessions_stored(server: InProcessServer) -> list[dict[str, Any]]:
    """The sessions the server's store holds (``GET /eve/v1/sessions``)."""
    response = await asyncio.to_thread(server.request, "GET", "/sessions")
    assert response.status_code == 200, response.text
    sessions: list[dict[str, Any]] = response.json()["sessions"]
    return sessions


class ThroughServer(httpx2.AsyncBaseTransport):
    def __init__(self, server: InProcessServer) -> None:
        self.server = server

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        await request.aread()
        http = self.server.http
        assert http is not None, "start() the server first"
        inner = http.build_request(
            request.method,
            str(request.url),
            headers=request.headers.multi_items(),
            content=request.content,
        )
        response = await asyncio.to_thread(http.send, inner, stream=True)
        return httpx2.Response(
            response.status_code,
            headers=response.headers.multi_items(),
            stream=_Body(response),
        )


class _Body(httpx2.AsyncByteStream):
    def __init__(self, response: Any) -> None:
        self.response = response
        self.chunks: Iterator[bytes] = response.iter_raw()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while (chunk := await asyncio.to_thread(next, self.chunks, None)) is not None:
            yield chunk

    async def aclose(self) -> None:
        await asyncio.to_thread(self.response.close)


@contextlib.asynccontextmanager
async def connect(server: InProcessServer | str, token: str | None) -> AsyncIterator[ClientSession]:
    """An initialized MCP session with the channel, sending ``token`` as the bearer:
    through an ``InProcessServer``, or over a socket to a server's root URL."""
    headers = {} if token is None else {"authorization": f"Bearer {token}"}
    root, transport = (server, None) if isinstance(server, str) else (ROOT, ThroughServer(server))
    http = httpx2.AsyncClient(
        transport=transport, headers=headers, timeout=httpx2.Timeout(30, read=60)
    )
    async with (
        http,
        streamable_http_client(root + PATH, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@contextlib.asynccontextmanager
async def modern(server: InProcessServer) -> AsyncIterator[Client]:
    """The SDK's high-level ``Client``, which negotiates the newest protocol (2026-07-28:
    every request carries its own version, no handshake) where a server has it."""
    headers = {"authorization": f"Bearer {TOKEN}"}
    http = httpx2.AsyncClient(
        transport=ThroughServer(server), headers=headers, timeout=httpx2.Timeout(30, read=60)
    )
    async with http, Client(streamable_http_client(ROOT + PATH, http_client=http)) as client:
        yield client


def view(result: CallToolResult) -> dict[str, Any]:
    """A successful call's ``TurnView``: its structured content, which is its text too."""
    assert not result.is_error, result.content
    structured: dict[str, Any] = result.structured_content
    [text] = result.content
    assert text.type == "text" and json.loads(text.text) == structured
    return structured


def refusal(result: CallToolResult) -> tuple[str, str]:
    """A refused call's error code and message."""
    assert result.is_error, result.structured_content
    error: dict[str, str] = result.structured_content
    return error["error"], error["message"]
