"""The ai_sdk channel on a real uvicorn, on a loopback port, in a thread of the test's process
(the ``ai`` package's client runs in Node, which needs a socket), over an agent whose model
answers by the user's message (``FunctionModel``, a real model client): ``ship <item>``
calls a tool a person approves, ``hold`` one that runs until the test releases it, ``wait``
one that runs until the turn is cancelled, ``think`` reasons first; anything else is
answered in text."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import queue
import shutil
import socket
import subprocess
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
import pytest
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
#: where the tools write the files the tests wait on (the server's app root)
ROOT_ENV = "EVE_AI_SDK_TEST_ROOT"
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
        import os
        from pathlib import Path
        from eve.tools import ToolContext, tool
        ROOT_ENV = "EVE_AI_SDK_TEST_ROOT"

        @tool
        async def hold(ctx: ToolContext) -> str:
            '''Run until the test writes release-<session id>.'''
            here = Path(os.environ[ROOT_ENV])
            (here / f"hold-{ctx.session_id}.started").write_text("yes")
            while not (here / f"release-{ctx.session_id}").exists():
                await asyncio.sleep(0.02)
            return "released"
    """,
    "agent/tools/wait.py": """
        import asyncio
        import os
        from pathlib import Path
        from eve.tools import ToolContext, tool
        ROOT_ENV = "EVE_AI_SDK_TEST_ROOT"

        @tool
        async def wait(ctx: ToolContext) -> str:
            '''Run until the turn is cancelled (at most a minute).'''
            (Path(os.environ[ROOT_ENV]) / f"wait-{ctx.session_id}.started").write_text("yes")
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
    _saved_env: dict[str, str | None] = field(default_factory=dict)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ChatServer:
        env = {"EVE_WORKER_ID": "ai-sdk-test", ROOT_ENV: str(self.app_root)}
        self._saved_env = {name: os.environ.get(name) for name in env}
        os.environ.update(env)
        # while it runs, the process works where a server started there would
        self._cwd = Path.cwd()
        os.chdir(self.app_root)
        try:
            app = self._app()
        except BaseException:
            self._leave()
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

    def followed(self) -> int:
        """How many followed streams the server serves now (a resumed chat's among them)."""
        assert self._server is not None
        open_streams: int = self._server.config.app.state.followers.open
        return open_streams

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
        self._leave()

    def _leave(self) -> None:
        if self._cwd is not None:
            os.chdir(self._cwd)
        for name, value in self._saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    def sessions(self) -> list[dict[str, Any]]:
        response = httpx.get(
            self.base + "/eve/v1/sessions?limit=100",
            headers={"authorization": f"Bearer {TOKEN}"},
            timeout=10,
        )
        response.raise_for_status()
        sessions: list[dict[str, Any]] = response.json()["sessions"]
        return sessions


def install_packages() -> None:
    """``npm ci`` in ``js/`` unless its packages are there; one installer at a time (pytest
    workers start together). Skips when Node is not installed."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not installed: the ai package's client cannot run")
    with (JS / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not all((JS / "node_modules" / name).is_dir() for name in ("ai", "esbuild")):
            install = ["npm", "ci", "--no-audit", "--no-fund"]
            subprocess.run(install, cwd=JS, check=True, capture_output=True)


class NodeClient:
    """``js/client.mjs``, one process for a test module (loading the ``ai`` package once):
    ``start`` sends it a chat to run, ``finish`` reads each step's outcome."""

    def __init__(self) -> None:
        install_packages()
        self.process = subprocess.Popen(
            ["node", str(JS / "client.mjs")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put("")  # the process ended

    def _send(self, command: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()

    def _next(self, timeout: float = 30) -> dict[str, Any]:
        line = self.lines.get(timeout=timeout)
        assert line, f"the Node client ended (exit code {self.process.poll()})"
        answer: dict[str, Any] = json.loads(line)
        return answer

    def start(self, server: ChatServer, steps: list[dict[str, Any]], *, chat: str) -> None:
        api = server.base + server.channels[0].path
        self._send({"api": api, "token": TOKEN, "chatId": chat, "steps": steps})

    def streaming(self, step: int) -> None:
        """Until the client reads the first chunk of step ``step``."""
        while (answer := self._next()).get("streaming") != step:
            assert "done" not in answer, f"the chat ended before step {step} streamed: {answer}"

    def finish(self) -> list[dict[str, Any]]:
        """Each step's outcome, once the chat is done."""
        while "done" not in (answer := self._next()):
            pass
        done: list[dict[str, Any]] = answer["done"]
        return done

    def run(
        self, server: ChatServer, steps: list[dict[str, Any]], *, chat: str
    ) -> list[dict[str, Any]]:
        self.start(server, steps, chat=chat)
        return self.finish()

    def validate(self, bodies: list[str]) -> list[dict[str, Any]]:
        """Each SSE body read as the transport reads a response."""
        self._send({"validate": bodies})
        return self.finish()

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(10)


def node_client() -> Iterator[NodeClient]:
    """A module's client (its fixture)."""
    client = NodeClient()
    try:
        yield client
    finally:
        client.close()
