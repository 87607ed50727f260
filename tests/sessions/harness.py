"""``eve serve`` as a subprocess on a free port, and the HTTP driver every test server shares.

A test that needs no process to die or restart uses ``InProcessServer`` (``inprocess.py``),
the same driver over the same app, without a process or a socket.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx
import msgspec

from eve.wire.requests import CreateBody, FollowUpBody, InputResponse, RequestBody
from tests.forked import Command, popen
from tests.polling import pauses
from tests.ports import free_port

Event = dict[str, Any]


@functools.cache
def loopback_tls() -> ssl.SSLContext:
    """The TLS context the tests' own clients of a test server are given: they speak plain
    HTTP to loopback and never use one, but httpx makes one for each client unless given
    it, loading the CA bundle each time (20 ms of CPU, a few hundred times a run)."""
    return ssl.create_default_context()


class Driver:
    """The session API's calls as the tests make them; a server says how a request travels."""

    token: str | None

    @property
    def url(self) -> str:
        raise NotImplementedError

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """``method`` on ``url + path``, with the token unless ``headers`` is given."""
        raise NotImplementedError

    def stream(self, path: str, **kwargs: Any) -> AbstractContextManager[httpx.Response]:
        """A GET whose body is read as the server sends it."""
        raise NotImplementedError

    def headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.token}"} if self.token else {}

    def post(self, path: str, body: Any = None, **kwargs: Any) -> httpx.Response:
        """POST ``body``: a request Struct of ``eve.wire.requests``, or JSON data as it is
        (a test of what the server makes of a body no client of eve sends)."""
        if isinstance(body, RequestBody):
            body = msgspec.to_builtins(body)
        if body is not None:
            kwargs["json"] = body
        return self.request("POST", path, **kwargs)

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", path, **kwargs)

    def create(self, message: str | None = None) -> str:
        response = self.post("/session", CreateBody(message=message))
        assert response.status_code == 202, response.text
        session_id: str = response.json()["sessionId"]
        return session_id

    def send(self, session_id: str, message: str) -> httpx.Response:
        return self.post(f"/session/{session_id}", FollowUpBody(message=message))

    def answer(self, session_id: str, request_id: str, option: str) -> None:
        """Answer a parked input request; the server must take it (202, resolved)."""
        answer = InputResponse(request_id=request_id, option_id=option)
        response = self.post(f"/session/{session_id}", FollowUpBody(input_responses=[answer]))
        assert response.status_code == 202, response.text
        assert response.json()["status"] == "resolved"

    def events(self, session_id: str, start: int = 0) -> list[Event]:
        response = self.get(f"/session/{session_id}/stream?startIndex={start}&follow=false")
        assert response.status_code == 200, response.text
        return [json.loads(line) for line in response.text.splitlines() if line.strip()]

    def wait_for(
        self, session_id: str, done: Callable[[list[Event]], bool], timeout: float = 60.0
    ) -> list[Event]:
        deadline = time.monotonic() + timeout
        for pause in pauses(0.1):
            events = self.events(session_id)
            if done(events):
                return events
            if time.monotonic() > deadline:
                types = [e["type"] for e in events]
                raise AssertionError(f"timed out; events so far: {types}")
            time.sleep(pause)
        raise AssertionError("unreachable: pauses() never ends")


@dataclass
class Server(Driver):
    """One ``eve serve`` process; ``restart()`` starts it again on the same port and name."""

    app_root: Path
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)
    token: str | None = None
    #: ``eve serve``, forked from a process that has imported eve (``tests/forked.py``)
    proc: Command | None = None
    #: where the server's output goes, for a test that measures it; None: a temporary file
    log_path: Path | None = None
    #: what the process writes, in a file rather than a pipe: a pipe nobody reads while
    #: the test runs fills up (64 KiB) under a burst of warnings, and then every thread of
    #: the server that logs blocks, requests and shutdown included
    log: IO[str] | None = None
    #: one client for every request: ``httpx.get`` builds a client (and its TLS context) per
    #: call, 24 ms of CPU, and the tests poll every 0.1 s. It keeps no connection alive, as
    #: ``httpx.get`` did not: a test may SIGKILL the worker process a pooled one went to
    _http: httpx.Client | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/eve/v1"

    def _client(self) -> httpx.Client:
        if self._http is None:
            self._http = httpx.Client(
                timeout=30,
                limits=httpx.Limits(max_keepalive_connections=0),
                verify=loopback_tls(),
            )
        return self._http

    def _close_client(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    def start(self, timeout: float = 60.0) -> Server:
        # provider keys are already gone: tests/conftest.py removes them for every test
        env = {**os.environ, "EVE_WORKER_ID": "test-worker", **self.env}
        if self.log is None:
            self.log = (
                self.log_path.open("a+", encoding="utf-8")
                if self.log_path is not None
                else tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115
            )
        self.proc = popen(
            self.command(), cwd=self.app_root, env=env, stdout=self.log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + timeout
        waits = pauses(0.1)
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"eve serve exited early:\n{self.output()}")
            try:
                if self._client().get(self.url + "/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(next(waits))
        raise AssertionError(f"eve serve never became healthy:\n{self.output()}")

    def command(self) -> list[str]:
        """What starts the server (a subclass serves eve another way, e.g. mounted in a host)."""
        return [sys.executable, "-m", "eve", "serve", "--port", str(self.port), *self.args]

    def output(self) -> str:
        """Stop the process; everything it (and the ones before a ``restart``) wrote."""
        self._close_client()
        if self.proc is None or self.log is None:
            return ""
        stuck = ""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                # still say what it wrote: a server that will not stop is what to debug
                self.proc.kill()
                self.proc.wait(10)
                stuck = "\n[did not stop within 10 s of SIGTERM]"
        self.log.seek(0)
        return self.log.read() + stuck

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs, as in a power cut."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> str:
        return self.output()

    def restart(self) -> Server:
        if self.proc is not None and self.proc.poll() is None:
            self.kill()
        return self.start()

    # --- HTTP ---------------------------------------------------------------------------

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        kwargs.setdefault("headers", self.headers())
        return self._client().request(method, self.url + path, **kwargs)

    def stream(self, path: str, **kwargs: Any) -> AbstractContextManager[httpx.Response]:
        # a client of its own: a stream outlives requests, and may still be read while the
        # server stops, when the shared client is closed
        kwargs.setdefault("headers", self.headers())
        return httpx.stream("GET", self.url + path, timeout=30, verify=loopback_tls(), **kwargs)


def follow_to_end(
    driver: Driver, session_id: str, *, following: threading.Barrier | None = None
) -> str:
    """Follow the session's stream until it ends: ``"ended"`` when it ended as a complete
    response, else the name of the client's error. Waits on ``following`` once served."""
    try:
        with driver.stream(f"/session/{session_id}/stream?startIndex=0") as response:
            lines = response.iter_lines()
            next(lines)  # the stream is open and served
            if following is not None:
                following.wait()
            for _ in lines:
                pass
    except httpx.HTTPError as error:
        return type(error).__name__
    return "ended"


def count(type_: str, n: int = 1) -> Callable[[list[Event]], bool]:
    """A ``wait_for`` condition: at least ``n`` events of ``type_``."""
    return lambda events: sum(e["type"] == type_ for e in events) >= n


def types(events: list[Event]) -> list[str]:
    return [e["type"] for e in events]


def assert_dense(events: list[Event]) -> None:
    """Indexes run 0, 1, 2, … with no gap and no repeat."""
    assert [e["meta"]["index"] for e in events] == list(range(len(events)))


def script(root: Path, responses: list[dict[str, Any]]) -> None:
    (root / "script.json").write_text(json.dumps(responses), encoding="utf-8")
