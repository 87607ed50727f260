"""Lines of standard input read by the event loop, so that waiting for one can be given up.

A thread blocked in ``readline`` cannot be stopped, and the interpreter waits for it at exit:
a prompt given up on Ctrl-C would keep the process alive until the next Enter.
"""

from __future__ import annotations

import asyncio
import os

_CHUNK = 65536


class StdinLines:
    """The lines of one file descriptor (standard input by default), read as they come."""

    def __init__(self, fd: int = 0) -> None:
        self.fd = fd
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
