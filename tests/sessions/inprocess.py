"""The app ``eve serve`` runs, served in the test's own process by Starlette's ``TestClient``.

``TestClient`` runs the app's lifespan (the durable service starts and stops with it) on an
event loop in a thread of its own, and hands a response's body over as the app sends it, so
a followed ``/stream`` works. No process starts and no port opens, which is most of what a
test of ``Server`` waits for. What it cannot do is die: crash recovery, ``--workers``,
startup errors and several processes on one PostgreSQL stay with ``Server``.
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from starlette.testclient import TestClient

from eve.auth.settings import OIDCSettings
from eve.channels.declaration import ChannelDeclaration
from eve.cli.agent_setup import prepare
from eve.server import ServerOptions, create_app, service_for
from eve.server.auth import TOKEN_ENV
from tests.sessions.harness import Driver

#: where ``TestClient`` sends requests (no socket is opened for it): a loopback address,
#: a ``Host`` the app answers by default
ROOT = "http://127.0.0.1"
PREFIX = "/eve/v1"


@dataclass
class InProcessServer(Driver):
    """The same driver as ``Server``, over the app in this process.

    While it runs, ``env`` is set in ``os.environ`` (the app reads it as ``eve serve`` would)
    and the working directory is ``app_root`` (tools write files relative to it, as in a
    server started there); ``stop()`` puts both back and returns what the app logged.
    """

    app_root: Path
    env: dict[str, str] = field(default_factory=dict)
    token: str | None = None
    #: ``eve serve --model``: the model every node uses instead of its configured one
    model: str | None = None
    #: ``eve serve --concurrency``: steps computing at once in this worker
    concurrency: int = 100
    #: the channels mounted beside the session API (as ``agent/channels/`` declares them)
    channels: list[ChannelDeclaration] = field(default_factory=list)
    #: the OIDC issuer whose tokens prove users, and how it is reached (``Provider``)
    oidc: OIDCSettings | None = None
    oidc_transport: httpx.AsyncBaseTransport | None = None
    #: what makes the app's event loop (``eve.server.workers.serving_loop``); None: asyncio's
    loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = None
    http: TestClient | None = None
    _saved_env: dict[str, str | None] = field(default_factory=dict)
    _saved_cwd: Path | None = None
    _log: io.StringIO = field(default_factory=io.StringIO)
    _handler: logging.Handler | None = None

    @property
    def url(self) -> str:
        return ROOT + PREFIX

    def start(self) -> InProcessServer:
        self._enter()
        try:
            setup = asyncio.run(prepare(self.app_root, model=self.model, max_turns=None))
            options = ServerOptions(
                app_root=self.app_root,
                token=os.environ.get(TOKEN_ENV) or None,
                concurrency=self.concurrency,
                oidc=self.oidc,
                oidc_transport=self.oidc_transport,
            )
            app = create_app(options, service_for(options, setup), channels=self.channels)
            # as a server would: an unhandled error is a 500 to the client, not a raise here
            self.http = TestClient(
                app,
                base_url=ROOT,
                raise_server_exceptions=False,
                backend_options={"loop_factory": self.loop_factory},
            )
            self.http.__enter__()  # the lifespan: the service starts
        except BaseException:
            self._leave()
            raise
        return self

    def stop(self) -> str:
        """Stop the app (its lifespan stops the service) and return its log."""
        try:
            if self.http is not None:
                self.http.__exit__(None, None, None)
                self.http = None
        finally:
            self._leave()
        return self._log.getvalue()

    def _enter(self) -> None:
        changes = {"EVE_WORKER_ID": "test-worker", **self.env}
        self._saved_env = {name: os.environ.get(name) for name in changes}
        os.environ.update(changes)
        self._saved_cwd = Path.cwd()
        os.chdir(self.app_root)
        self._handler = logging.StreamHandler(self._log)
        self._handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logging.getLogger().addHandler(self._handler)

    def _leave(self) -> None:
        if self._handler is not None:
            logging.getLogger().removeHandler(self._handler)
            self._handler = None
        if self._saved_cwd is not None:
            os.chdir(self._saved_cwd)
            self._saved_cwd = None
        for name, value in self._saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self._saved_env = {}

    # --- HTTP ---------------------------------------------------------------------------

    def _client(self) -> TestClient:
        assert self.http is not None, "start() the server first"
        return self.http

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        kwargs.setdefault("headers", self.headers())
        return self._client().request(method, PREFIX + path, **kwargs)

    def stream(self, path: str, **kwargs: Any) -> AbstractContextManager[httpx.Response]:
        kwargs.setdefault("headers", self.headers())
        return self._client().stream("GET", PREFIX + path, **kwargs)

    def transport(self) -> httpx.BaseTransport:
        """For ``EveClient(server.url, transport=server.transport())``."""
        return _Through(self._client())

    def async_transport(self) -> httpx.AsyncBaseTransport:
        """For ``AsyncEveClient(server.url, transport=server.async_transport())``."""
        return _ThroughThreads(self._client())


class _Through(httpx.BaseTransport):
    """Sends each request through the one ``TestClient``: its event loop is where the app,
    and the durable service the lifespan started, run; a second client would start them
    again. ``TestClient`` is built on the ``httpx2`` fork, so requests and responses are
    copied across, the body as a live stream."""

    def __init__(self, http: TestClient) -> None:
        self.http = http

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return _copied(self.http.send(_request_for(self.http, request), stream=True), _Body)


class _ThroughThreads(httpx.AsyncBaseTransport):
    """``_Through`` for an asyncio caller: the blocking calls run in worker threads, so the
    caller's loop stays free while the app answers on its own loop."""

    def __init__(self, http: TestClient) -> None:
        self.http = http

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        inner = _request_for(self.http, request)
        response = await asyncio.to_thread(self.http.send, inner, stream=True)
        return _copied(response, _AsyncBody)


def _request_for(http: TestClient, request: httpx.Request) -> Any:
    return http.build_request(
        request.method,
        str(request.url),
        headers=request.headers.multi_items(),
        content=request.content,
    )


def _copied(
    response: Any, body: Callable[[Any], httpx.SyncByteStream | httpx.AsyncByteStream]
) -> httpx.Response:
    return httpx.Response(
        response.status_code, headers=response.headers.multi_items(), stream=body(response)
    )


class _Body(httpx.SyncByteStream):
    def __init__(self, response: Any) -> None:
        self.response = response

    def __iter__(self) -> Iterator[bytes]:
        yield from self.response.iter_raw()

    def close(self) -> None:
        self.response.close()


class _AsyncBody(httpx.AsyncByteStream):
    def __init__(self, response: Any) -> None:
        self.response = response
        self.chunks: Iterator[bytes] = response.iter_raw()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            chunk = await asyncio.to_thread(next, self.chunks, None)
            if chunk is None:
                return
            yield chunk

    async def aclose(self) -> None:
        await asyncio.to_thread(self.response.close)
