"""A real loopback HTTP server that plays scripted replies to the provider SDKs under test.

Each request gets the next :class:`Reply` in order and is recorded as :class:`Received`, so
a test can both drive the SDK's real HTTP and SSE parsing and assert what it sent.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass
class Reply:
    """One scripted response: ``chunks`` are body pieces, a float among them is a pause."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[bytes | float] = field(default_factory=list)
    #: drop the connection after the chunks, without ending the chunked body
    cut: bool = False
    #: send the body in chunked encoding, piece by piece, as a provider streams
    streaming: bool = True


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    #: the body as sent (what a signature covers)
    raw: bytes = b""


def anthropic_sse(events: Iterable[dict[str, Any]], *, cut: bool = False) -> Reply:
    """A Messages API stream: each event named after its type, one body chunk per event."""
    chunks: list[bytes | float] = [
        f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events
    ]
    return Reply(headers={"Content-Type": "text/event-stream"}, chunks=chunks, cut=cut)


def openai_sse(chunks: Iterable[dict[str, Any]], *, done: bool = True, cut: bool = False) -> Reply:
    """A Chat Completions stream: unnamed ``data:`` events, then ``[DONE]`` unless cut."""
    pieces: list[bytes | float] = [f"data: {json.dumps(c)}\n\n".encode() for c in chunks]
    if done:
        pieces.append(b"data: [DONE]\n\n")
    return Reply(headers={"Content-Type": "text/event-stream"}, chunks=pieces, cut=cut)


def json_reply(status: int, body: Any) -> Reply:
    return Reply(
        status=status,
        headers={"Content-Type": "application/json"},
        chunks=[json.dumps(body).encode()],
        streaming=False,
    )


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        received = Received(
            method="POST",
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=json.loads(raw) if raw else None,
            raw=raw,
        )
        self.server.script.requests.append(received)
        try:
            self._send(self.server.script.reply_to(received))
        except (BrokenPipeError, ConnectionResetError):
            # The client stopped reading (cancellation); nothing is left to say to it.
            self.close_connection = True

    def _send(self, reply: Reply) -> None:
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if not reply.streaming:
            body = b"".join(c for c in reply.chunks if isinstance(c, bytes))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for piece in reply.chunks:
            if isinstance(piece, float):
                time.sleep(piece)
                continue
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()
        if reply.cut:
            self.close_connection = True
            return
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    script: ScriptedServer


class ScriptedServer:
    """``with ScriptedServer(reply, ...) as server:`` serves on ``server.url`` until exit."""

    def __init__(self, *replies: Reply, tls: ssl.SSLContext | None = None) -> None:
        self.replies = list(replies)
        self.requests: list[Received] = []
        self._lock = threading.Lock()
        self._http = _Server(("127.0.0.1", 0), _Handler)
        self._http.script = self
        #: ``tls`` given: the server speaks HTTPS with it (a failed handshake drops the client)
        self._scheme = "http" if tls is None else "https"
        if tls is not None:
            self._http.socket = tls.wrap_socket(self._http.socket, server_side=True)
        self._thread = threading.Thread(target=self._http.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"{self._scheme}://{host!s}:{port}"

    def add(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def reply_to(self, received: Received) -> Reply:
        """The reply for a request: the next scripted one (a richer server decides by it)."""
        return self.next_reply()

    def play(self, scripts: list[T | Reply | Callable[[Any], T | Reply]], body: Any) -> T | Reply:
        """The next of a richer server's ``scripts`` for a request's ``body``: a scripted
        turn, or a ``Reply`` as it is; a callable is asked for either. Without one, the next
        plain reply (the "no reply scripted" 500 when there is none)."""
        if not scripts:
            return self.next_reply()
        script = scripts.pop(0)
        return script(body) if callable(script) else script

    def next_reply(self) -> Reply:
        with self._lock:
            if self.replies:
                return self.replies.pop(0)
        return json_reply(500, {"error": {"type": "test_error", "message": "no reply scripted"}})

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)
