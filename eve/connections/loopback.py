"""A loopback listener for OAuth callbacks, where no eve server answers them (``eve run``).

When the redirect URL is a loopback address (RFC 8252 §7.3: a native client receives the
authorization response on a loopback port), a small listener answers ``GET <callback
path>`` on that port while a sign-in waits, and hands the query to
``connections.authorization``. Concurrent sign-ins of the process share it. A port that is
taken is left alone: that is an ``eve serve`` or ``eve dev --web`` on it, which answers the
callback route itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import ClassVar
from urllib.parse import parse_qsl, urlparse

from eve.connections import authorization
from eve.errors import OAuthCallbackInvalid

log = logging.getLogger("eve.connections")
_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
_MAX_REQUEST_LINE = 16_384
_SIGNED_IN = "Signed in: eve goes on. You can close this tab."


class LoopbackListener:
    """One listening socket per port of this process, open while any sign-in needs it."""

    _open: ClassVar[dict[tuple[str, int], tuple[asyncio.Server, int]]] = {}

    @classmethod
    @contextlib.asynccontextmanager
    async def for_url(cls, url: str) -> AsyncIterator[None]:
        """Listen for ``url``'s callbacks while the block runs, if this process must."""
        parsed = urlparse(url)
        host = parsed.hostname or ""
        if host not in _LOOPBACK_HOSTS:
            yield
            return
        key = (host, parsed.port or 80)
        started = await cls._acquire(key, parsed.path)
        try:
            yield
        finally:
            if started:
                await cls._release(key)

    @classmethod
    async def _acquire(cls, key: tuple[str, int], path: str) -> bool:
        held = cls._open.get(key)
        if held is not None:
            cls._open[key] = (held[0], held[1] + 1)
            return True
        try:
            server = await asyncio.start_server(
                lambda r, w: _answer(r, w, path), host=key[0], port=key[1]
            )
        except OSError as error:
            # an eve server listens there (this process's or another's) and answers the
            # callback route itself
            log.info("OAuth callback listener on %s:%d not opened: %s", key[0], key[1], error)
            return False
        cls._open[key] = (server, 1)
        return True

    @classmethod
    async def _release(cls, key: tuple[str, int]) -> None:
        server, count = cls._open[key]
        if count > 1:
            cls._open[key] = (server, count - 1)
            return
        del cls._open[key]
        server.close()
        await server.wait_closed()


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str) -> None:
    try:
        line = await asyncio.wait_for(reader.readline(), 10.0)
        status, body = _respond(line[:_MAX_REQUEST_LINE].decode("latin-1"), path)
        payload = body.encode()
        writer.write(
            f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode()
            + payload
        )
        await writer.drain()
    except (TimeoutError, ConnectionError):
        pass
    finally:
        writer.close()


def _respond(request_line: str, path: str) -> tuple[str, str]:
    parts = request_line.split()
    if len(parts) < 2 or parts[0] != "GET":
        return "405 Method Not Allowed", "only GET"
    target = urlparse(parts[1])
    if target.path != path:
        return "404 Not Found", "not an OAuth callback"
    try:
        authorization.complete(authorization.callback_of(dict(parse_qsl(target.query))))
    except OAuthCallbackInvalid as error:
        return "400 Bad Request", str(error)
    return "200 OK", _SIGNED_IN
