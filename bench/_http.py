"""Just enough HTTP/1.1 for the scale benchmark's clients, on asyncio's streams.

A client sends small JSON POSTs and follows one chunked NDJSON stream, so this speaks only
that: a request with a ``Content-Length`` body, an answer with a ``Content-Length`` or a
chunked body, and a stream's chunks split into lines. It costs a client a few reads per
answer and per chunk, where a general client (httpx) spent milliseconds of CPU per turn.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import urlsplit

#: the longest status line and headers an answer may have
MAX_HEAD_BYTES = 64 * 1024


class HttpFailed(Exception):
    """The server's answer was not HTTP/1.1 as this module speaks it."""


@dataclass(frozen=True, kw_only=True)
class Origin:
    """Where a server is, and the headers every request to it carries."""

    url: str
    host: str
    port: int
    #: the path every route is under (``/eve/v1``)
    prefix: str
    #: ``Host`` and ``Authorization``, encoded once
    headers: bytes

    @classmethod
    def of(cls, url: str, *, token: str) -> Origin:
        parts = urlsplit(url)
        if parts.scheme != "http" or parts.hostname is None:
            raise ValueError(f"not an http:// URL: {url}")
        port = parts.port or 80
        headers = f"Host: {parts.netloc}\r\nAuthorization: Bearer {token}\r\n".encode()
        return cls(
            url=url, host=parts.hostname, port=port, prefix=parts.path.rstrip("/"), headers=headers
        )


@dataclass(kw_only=True)
class Connection:
    """A client's one kept-alive connection for its requests, as a browser keeps one:
    opened on the first request, and again only after the server closed it (an idle
    connection past the server's keep-alive, or an answer that said ``Connection: close``).

    A connection per request cost the server an accept, a close and a per-connection
    setup for every message (a tenth of its busy time at N = 1,000).
    """

    origin: Origin
    reader: asyncio.StreamReader | None = None
    writer: asyncio.StreamWriter | None = None
    #: connections opened (the first and each one after the server closed the last)
    opened: int = 0

    async def request(self, method: str, path: str, body: bytes) -> tuple[int, bytes]:
        """Send one JSON request; the answer's status and body."""
        status, _, answer = await self.exchange(method, path, body)
        return status, answer

    async def exchange(
        self, method: str, path: str, body: bytes
    ) -> tuple[int, dict[bytes, bytes], bytes]:
        """Send one JSON request; the answer's status, headers (lower-case names) and body."""
        reader, writer = await self._open()
        try:
            writer.write(
                b"%s %s HTTP/1.1\r\n%sContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n%s"
                % (method.encode(), path.encode(), self.origin.headers, len(body), body)
            )
            status, headers = await _head(reader)
            answer = await _body(reader, headers)
        except BaseException:
            self.close()  # half an exchange: the connection's state is unknown
            raise
        if headers.get(b"connection", b"").lower() == b"close":
            self.close()
        return status, headers, answer

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self.reader is None or self.writer is None or self.reader.at_eof():
            # at_eof: the server closed it while it was idle (its FIN was read meanwhile)
            self.close()
            self.reader, self.writer = await asyncio.open_connection(
                self.origin.host, self.origin.port
            )
            self.opened += 1
        return self.reader, self.writer

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


@contextlib.asynccontextmanager
async def stream_lines(origin: Origin, path: str) -> AsyncIterator[AsyncIterator[list[bytes]]]:
    """A followed stream's lines, a list per chunk the server wrote (``b""`` is a
    heartbeat), until the server ends it."""
    reader, writer = await asyncio.open_connection(origin.host, origin.port)
    try:
        writer.write(b"GET %s HTTP/1.1\r\n%s\r\n" % (path.encode(), origin.headers))
        status, headers = await _head(reader)
        if status != 200:
            body = await _body(reader, headers)
            raise HttpFailed(f"GET {path}: {status} {body[:200]!r}")
        if headers.get(b"transfer-encoding") != b"chunked":
            raise HttpFailed(f"GET {path}: the stream is not chunked")
        yield _lines(reader)
    finally:
        writer.close()


async def _lines(reader: asyncio.StreamReader) -> AsyncIterator[list[bytes]]:
    pending = b""
    async for chunk in _chunks(reader):
        # the server writes whole lines per chunk, but HTTP lets a chunk end anywhere
        *lines, pending = (pending + chunk).split(b"\n")
        yield lines


async def _head(reader: asyncio.StreamReader) -> tuple[int, dict[bytes, bytes]]:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError as error:
        raise HttpFailed("an answer's head is too long") from error
    status_line, *lines = head[:-4].split(b"\r\n")
    version, _, rest = status_line.partition(b" ")
    if not version.startswith(b"HTTP/1.") or not rest[:3].isdigit():
        raise HttpFailed(f"not an HTTP/1.1 answer: {status_line[:100]!r}")
    headers = {}
    for line in lines:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    return int(rest[:3]), headers


async def _body(reader: asyncio.StreamReader, headers: dict[bytes, bytes]) -> bytes:
    if headers.get(b"transfer-encoding") == b"chunked":
        return b"".join([chunk async for chunk in _chunks(reader)])
    length = headers.get(b"content-length")
    if length is None:
        return await reader.read()  # to the connection's end
    return await reader.readexactly(int(length))


async def _chunks(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    """A chunked body's chunks, until its last (a clean end)."""
    while True:
        size_line = await reader.readuntil(b"\r\n")
        try:
            size = int(size_line.partition(b";")[0], 16)
        except ValueError:
            raise HttpFailed(f"a bad chunk size: {size_line[:40]!r}") from None
        if size == 0:
            while await reader.readuntil(b"\r\n") != b"\r\n":
                pass  # trailers
            return
        data = await reader.readexactly(size + 2)
        yield data[:-2]
