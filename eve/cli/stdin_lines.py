"""Lines of standard input read by the event loop, so that waiting for one can be given up.

A thread blocked in ``readline`` cannot be stopped, and the interpreter waits for it at exit:
a prompt given up on Ctrl-C would keep the process alive until the next Enter.
"""

from __future__ import annotations

import asyncio
import os
import sys

_CHUNK = 65536


class StdinLines:
    """The lines of one file descriptor (standard input by default), read as they come."""

    def __init__(self, fd: int | None = None) -> None:
        #: None: standard input was replaced by an in-memory stream (click's ``CliRunner``,
        #: a host embedding the CLI), read a line at a time: it never blocks
        self.fd = _fd_of_stdin() if fd is None else fd
        self._pending = b""
        self._ended = False

    async def line(self) -> str | None:
        """The next line, without its newline; None once the input has ended."""
        while b"\n" not in self._pending and not self._ended:
            chunk = await self._read()
            self._ended = not chunk
            self._pending += chunk
        if not self._pending:
            return None
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode(errors="replace").removesuffix("\r")

    async def _read(self) -> bytes:
        if self.fd is None:
            # no standard input at all (None) reads as one that has ended
            return sys.stdin.readline().encode() if sys.stdin is not None else b""
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()

        def readable() -> None:
            if not ready.done():
                ready.set_result(None)

        try:
            loop.add_reader(self.fd, readable)
        except PermissionError:
            # a regular file (or /dev/null), which the selector refuses: reading it never blocks
            return os.read(self.fd, _CHUNK)
        try:
            await ready
        finally:
            loop.remove_reader(self.fd)
        return os.read(self.fd, _CHUNK)


def _fd_of_stdin() -> int | None:
    try:
        return sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):
        return None
