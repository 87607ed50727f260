"""The ai_sdk channel on a real uvicorn, on a loopback port, in a thread of the test's process
(the ``ai`` package's client runs in Node, which needs a socket), over an agent whose model
answers by the user's message (``FunctionModel``, a real model client): ``ship <item>``
calls a tool a person approves, ``hold`` one that runs until the test releases it, ``wait``
one that runs until the turn is cancelled, ``think`` reasons first; anything else is
answered in text."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette

from eve.channels.declaration import ChannelDeclaration
from eve.cli.agent_setup import prepare
from eve.messages import ToolResultMessage, UserMessage
from eve.models.base import ModelRequest
from eve.models.events import (
    Done,
    ModelEvent,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from eve.models.function import FunctionModel
from eve.server import ServerOptions, create_app, service_for
from eve.server.workers import _Server
from tests.conftest import write_files

JS = Path(__file__).resolve().parent / "js"
TOKEN = "ai-sdk-channel-token"
CHANNEL = ChannelDeclaration(name="chat", kind="ai_sdk", path="/channels/chat")

FILES = {
    "agent/agent.py": """
        from eve import define_agent
        default = define_agent(model="offline/test")
    """,
    "agent/instructions.md": "Answer.\n",
    "agent/tools/ship.py": """
        from eve.tools import tool
        from eve.tools.approval import always

        @tool(approval=always())
        def ship(item: str) -> str:
            '''Ship an item (a person approves every call).'''
            return f"shipped {item}"
    """,
    "agent/tools/hold.py": """
        import asyncio
        from pathlib import Path
        from eve.tools import ToolContext, tool

        @tool
        async def hold(ctx: ToolContext) -> str:
            '''Run until the test writes release-<session id>.'''
            Path(f"hold-{ctx.session_id}.started").write_text("yes")
            while not Path(f"release-{ctx.session_id}").exists():
                await asyncio.sleep(0.02)
            return "released"
    """,
    "agent/tools/wait.py": """
        import asyncio
        from pathlib import Path
        from eve.tools import ToolContext, tool

        @tool
        async def wait(ctx: ToolContext) -> str:
            '''Run until the turn is cancelled (at most a minute).'''
            Path(f"wait-{ctx.session_id}.started").write_text("yes")
            await asyncio.wait_for(ctx.signal.wait(), 60)
            return "cancelled"
    """,
}


def _said(request: ModelRequest) -> str:
    for message in reversed(request.messages):
        if isinstance(message, UserMessage):
            return message.text
    return ""


async def answer(request: ModelRequest) -> AsyncIterator[ModelEvent]:
    """The model: a tool's result is answered with its text; a message by its first word."""
    last = request.messages[-1]
    if isinstance(last, ToolResultMessage):
        for word in ("done: ", last.content):
            yield TextDelta(text=word)
        yield Done(stop_reason="end_turn")
        return
    said = _said(request)
    verb, _, rest = said.partition(" ")
    if verb in ("ship", "hold", "wait"):
        data = {"item": rest} if verb == "ship" else {}
        yield ToolCallStart(id=f"call_{verb}", name=verb)
        yield ToolCallDelta(id=f"call_{verb}", json_delta=json.dumps(data))
        yield ToolCallEnd(id=f"call_{verb}", name=verb, input=data)
        yield Done(stop_reason="tool_use")
        return
    if verb == "think":
        yield ReasoningDelta(text="thinking it over")
    for word in ("you ", "said: ", said):
        yield TextDelta(text=word)
    yield Done(stop_reason="end_turn")


def make_root(root: Path) -> Path:
    write_files(root, FILES)
    return root


@dataclass
class ChatServer:
    """The app ``eve serve`` runs, with the chat channel, on ``127.0.0.1:port``; ``stop``
    then ``start`` is a restart on the same port and database."""

    app_root: Path
    channels: list[ChannelDeclaration] = field(default_factory=lambda: [CHANNEL])
    port: int = 0
    _server: uvicorn.Server | None = None
    _thread: threading.Thread | None = None
    _cwd: Path | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ChatServer:
        os.environ["EVE_WORKER_ID"] = "ai-sdk-test"
        # while it runs, tools write their files where a server started there would
        self._cwd = Path.cwd()
        os.chdir(self.app_root)
        try:
            app = self._app()
        except BaseException:
            os.chdir(self._cwd)
            raise
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        self.port = sock.getsockname()[1]
        ready = threading.Event()
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
        self._server = _Server(config, app, ready.set)
        self._thread = threading.Thread(
            target=asyncio.run, args=(self._server.serve(sockets=[sock]),), daemon=True
        )
        self._thread.start()
        if not ready.wait(30):
            raise RuntimeError("the server did not start in 30 s")
        return self

    def _app(self) -> Starlette:
        setup = asyncio.run(prepare(self.app_root, model=None, max_turns=None, announce=False))
        setup = replace(setup, client=FunctionModel(answer))
        options = ServerOptions(app_root=self.app_root, token=TOKEN, watch_seconds=3600)
        return create_app(options, service_for(options, setup), channels=self.channels)

    def stop(self) -> None:
        assert self._server is not None and self._thread is not None
        self._server.should_exit = True
        self._thread.join(30)
        self._server = self._thread = None
        if self._cwd is not None:
            os.chdir(self._cwd)

    def sessions(self) -> list[dict[str, Any]]:
        response = httpx.get(
            self.base + "/eve/v1/sessions?limit=100",
            headers={"authorization": f"Bearer {TOKEN}"},
            timeout=10,
        )
        response.raise_for_status()
        sessions: list[dict[str, Any]] = response.json()["sessions"]
        return sessions


def node_client(
    server: ChatServer, steps: list[dict[str, Any]], *, chat: str
) -> subprocess.Popen[str]:
    """``js/client.mjs`` running ``steps`` in one chat; its answer is JSON on stdout."""
    config = {"api": server.base + CHANNEL.path, "token": TOKEN, "chatId": chat, "steps": steps}
    return subprocess.Popen(
        ["node", str(JS / "client.mjs"), json.dumps(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def streaming(process: subprocess.Popen[str], step: int) -> None:
    """Until the client reads the first chunk of step ``step`` (it says so on stderr)."""
    assert process.stderr is not None
    for line in process.stderr:
        if line.strip() == f"streaming step {step}":
            return
    raise AssertionError(f"the client ended before step {step} streamed")


def finish(process: subprocess.Popen[str], timeout: float = 30) -> list[dict[str, Any]]:
    """Each step's outcome, once the client is done."""
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, f"the Node client failed:\n{err}\n{out}"
    results: list[dict[str, Any]] = json.loads(out)
    return results


def run_client(
    server: ChatServer, steps: list[dict[str, Any]], *, chat: str
) -> list[dict[str, Any]]:
    return finish(node_client(server, steps, chat=chat))
