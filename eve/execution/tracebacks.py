"""A failing tool's traceback as eve keeps it: from the tool's own frame, bounded, redacted.

The model reads only the one-line ``ErrorName: message``; the traceback is for the person
debugging the tool (the ``action.result`` event, ``eve run --debug``, the dev UI, the tool's
span). It is plain ``traceback`` text: no local variables are rendered, and what is left
goes through ``eve._redact``, so a secret in the exception's message is replaced too.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import traceback
from pathlib import Path
from types import TracebackType

from eve._redact import redact

#: the frames kept: the innermost ones, where the error was raised
MAX_FRAMES = 50
#: the characters kept (the end of the text: the innermost frames and the error)
MAX_CHARS = 8 * 1024

#: eve's own frames (the runner, the decorator's wrapper) above the tool's first one say
#: nothing about the tool; asyncio's and the thread pool's neither
_FRAMEWORK = tuple(
    f"{Path(directory).resolve()}/"
    for directory in (
        Path(__file__).parents[1],  # eve
        Path(asyncio.__file__).parent,
        Path(concurrent.futures.__file__).parent,
    )
)


def _from_the_tool(tb: TracebackType | None) -> TracebackType | None:
    """``tb`` without its leading framework frames (all of it if no other frame follows)."""
    start = tb
    while start is not None and start.tb_frame.f_code.co_filename.startswith(_FRAMEWORK):
        start = start.tb_next
    return start or tb


def bounded(text: str, *, limit: int = MAX_CHARS) -> str:
    """``text``'s last ``limit`` characters, after a line saying how many were cut."""
    if len(text) <= limit:
        return text
    return f"[traceback cut: the first {len(text) - limit:,} characters left out]\n" + text[-limit:]


def tool_traceback(error: BaseException) -> str:
    """``error``'s traceback (and those of its causes) from the tool's first frame on."""
    summary = traceback.TracebackException(
        type(error), error, _from_the_tool(error.__traceback__), limit=-MAX_FRAMES
    )
    return bounded(redact("".join(summary.format())))
