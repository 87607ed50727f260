"""Ctrl-C in the terminal commands: the first press cancels the turn, a second exits at once.

Exiting at once cannot go through ``SystemExit``: a sync tool runs in a worker thread, a
thread cannot be stopped, and the interpreter joins worker threads before it exits, so the
process would live as long as the tool. ``quit_now`` leaves such a thread behind instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator

import click

#: the exit status of a process ended by Ctrl-C (128 + SIGINT), as shells report it
INTERRUPTED = 130


def quit_now(code: int = INTERRUPTED) -> None:
    """Flush what was printed and end the process, without waiting for any thread."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


class CtrlC:
    """The SIGINT handler of a running turn: ``cancel`` on the first press, ``leave`` on the next.

    ``leave`` must end the process (``quit_now``), after saving what must be saved.
    """

    def __init__(self, *, cancel: Callable[[], object], leave: Callable[[], None]) -> None:
        self._cancel = cancel
        self._leave = leave
        self.pressed = False

    def __call__(self) -> None:
        if self.pressed:
            click.echo("\neve: quitting now", err=True)
            self._leave()
            return
        self.pressed = True
        click.echo("\neve: cancelling (Ctrl-C again to quit now)", err=True)
        self._cancel()

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """Handle SIGINT on the running loop while the block runs."""
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, self)
        try:
            yield
        finally:
            loop.remove_signal_handler(signal.SIGINT)
