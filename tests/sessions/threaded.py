"""The app ``eve serve`` runs, on a loopback socket, served from a thread of the test's process.

For what must reach a real URL (a docs example's ``curl``, a client built from ``$EVE_URL``)
and never needs its server to die: the steps ``eve serve`` takes (``prepare``, the service,
uvicorn on a socket bound as it binds one), without a second interpreter and its second of
imports. ``Server`` (``harness.py``) stays for a server that must die or restart.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import uvicorn

from eve.channels.declaration import ChannelDeclaration
from eve.cli.agent_setup import prepare
from eve.server import ServerOptions, create_app
from eve.server.app import service_for, start_service, stop_service
from eve.server.workers import Listen, bind


@dataclass
class ThreadedServer:
    """``start()`` serves ``root``'s agent and returns its root URL (the API is under
    ``/eve/v1``); ``stop()`` stops it, as ``Server`` and ``InProcessServer`` do."""

    app_root: Path
    #: ``eve serve --model``: the model every node uses instead of its configured one
    model: str | None = None
    token: str | None = None
    #: the channels mounted beside the session API (as ``agent/channels/`` declares them)
    channels: list[ChannelDeclaration] = field(default_factory=list)
    _uvicorn: uvicorn.Server | None = None
    _thread: threading.Thread | None = None
    _failure: BaseException | None = None
    _done: threading.Event = field(default_factory=threading.Event)

    def start(self) -> str:
        sock = bind(Listen(host="127.0.0.1", port=0))
        host, port = sock.getsockname()[:2]
        self._thread = threading.Thread(target=self._run, args=(sock,), daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 60
        while not (self._uvicorn is not None and self._uvicorn.started):
            if self._done.is_set():
                raise AssertionError("the threaded server stopped before serving") from (
                    self._failure
                )
            assert time.monotonic() < deadline, "the threaded server never served"
            time.sleep(0.02)
        return f"http://{host}:{port}"

    def stop(self) -> None:
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True
        if self._thread is None:
            return  # never started
        self._thread.join(30)
        assert not self._thread.is_alive(), "the threaded server did not stop"
        if self._failure is not None:
            raise AssertionError("the threaded server failed") from self._failure

    def _run(self, sock: socket.socket) -> None:
        try:
            asyncio.run(self._serve(sock))
        except BaseException as error:  # handed to the test's thread, which raises it
            self._failure = error
        finally:
            sock.close()
            self._done.set()

    async def _serve(self, sock: socket.socket) -> None:
        # as eve serve's worker does (eve/cli/serve_command.py), but uvicorn's own server,
        # whose should_exit the test's thread sets: no signal reaches a thread
        setup = await prepare(self.app_root, model=self.model, max_turns=None)
        options = ServerOptions(app_root=self.app_root, token=self.token, concurrency=100)
        app = create_app(options, service_for(options, setup), channels=self.channels)
        await start_service(app)
        try:
            config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
            self._uvicorn = uvicorn.Server(config)
            await self._uvicorn.serve(sockets=[sock])
        finally:
            await stop_service(app)
