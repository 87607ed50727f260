"""Processes under test that a person would drive: output read up to a marker, and eve on a
pseudo-terminal (what asks only at a terminal, and prompt_toolkit's prompt, need one)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import IO

from tests import forked

#: how long a test waits for a marker before failing (a bound, not a timing assertion)
BOUND_SECONDS = 30.0

# the terminal's control sequences (colours, cursor moves, prompt_toolkit's redraws)
_CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[=>]|\r")


def read_until(stream: IO[str], marker: str) -> str:
    """Read ``stream`` (a pipe of a running process) until ``marker`` has appeared."""
    seen = ""
    deadline = time.monotonic() + BOUND_SECONDS
    while marker not in seen:
        assert time.monotonic() < deadline, f"never saw {marker!r} in {seen!r}"
        char = stream.read(1)
        assert char, f"the process ended before {marker!r}: {seen!r}"
        seen += char
    return seen


class Terminal:
    """``python -m eve ARGS`` in ``root`` with a pseudo-terminal as standard input, and as
    its output too unless ``pipes`` (then stdout and stderr are pipes, read as usual)."""

    def __init__(self, root: Path, *args: str, pipes: bool = False) -> None:
        self.master, slave = pty.openpty()
        # a real size: prompt_toolkit lays its prompt out in the terminal's width
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 200, 0, 0))
        output: int = subprocess.PIPE if pipes else slave
        self.process = forked.popen(
            [sys.executable, "-m", "eve", *args],
            cwd=root,
            stdin=slave,
            stdout=output,
            stderr=output,
            text=pipes,
            # no cursor-position request: nothing here would answer it
            env={**os.environ, "PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm"},
        )
        os.close(slave)
        self.seen = ""

    def type(self, keys: str) -> None:
        """What a person types (``\\r`` is Enter, ``\\x03`` Ctrl-C)."""
        os.write(self.master, keys.encode())

    def _read(self, timeout: float) -> bool:
        """Add what the terminal shows within ``timeout`` to ``seen``; False once it closed."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            chunk = os.read(self.master, 4096)
        except OSError:  # the other side closed: the process ended
            return False
        self.seen += _CONTROL.sub("", chunk.decode(errors="replace"))
        return bool(chunk)

    def read_until(self, marker: str) -> str:
        """The terminal's text (control sequences left out) up to ``marker``."""
        deadline = time.monotonic() + BOUND_SECONDS
        while marker not in self.seen:
            left = deadline - time.monotonic()
            assert left > 0, f"never saw {marker!r} in {self.seen!r}"
            assert self._read(left), f"the process ended before {marker!r}: {self.seen!r}"
        shown, _, self.seen = self.seen.partition(marker)
        return shown + marker

    def wait(self) -> int:
        """The exit status, reading the terminal meanwhile (a full terminal blocks writes)."""
        deadline = time.monotonic() + BOUND_SECONDS
        while self.process.poll() is None:
            assert time.monotonic() < deadline, "the process did not end"
            self._read(0.1)
        os.close(self.master)
        return self.process.returncode
