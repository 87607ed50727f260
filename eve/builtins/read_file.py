"""The built-in ``read_file`` tool: show a text file of the workspace, a bounded slice at a time."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import BinaryIO, Literal

import pydantic

from eve.authoring.context import ToolContext
from eve.builtins._limits import (
    READ_MAX_BYTES,
    READ_SCAN_MAX_BYTES,
    decode_text,
    truncation_note,
)
from eve.builtins.workspace import open_for_reading, workspace_errors
from eve.errors import ReadOffsetTooFar
from eve.tools import define_tool

_CHUNK = 64 * 1024


class ReadFileInput(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    path: str = pydantic.Field(description="The file, relative to the workspace.")
    offset_line: int = pydantic.Field(
        default=0, ge=0, description="Lines to skip before reading; 0 starts at the top."
    )
    max_bytes: int = pydantic.Field(
        default=READ_MAX_BYTES,
        ge=1,
        le=READ_MAX_BYTES,
        description="At most this many bytes are shown; a note says how to read on.",
    )


#: how a scan for ``offset_line`` ended: on the line, at the end of the file, or at the cap
_ScanEnd = Literal["found", "end_of_file", "cap"]


def _skip_lines(file: BinaryIO, count: int, *, cap: int) -> tuple[int, _ScanEnd]:
    """Move past ``count`` lines reading at most ``cap`` bytes; how many were passed, and why
    the scan stopped.

    Reads in chunks so that one huge line is never held whole, and stops at ``cap`` so that
    a far offset (or a 2 GiB file without newlines) costs a bounded read, not the whole file.
    """
    skipped = 0
    scanned = 0
    unterminated = False
    while skipped < count:
        chunk = file.read(min(_CHUNK, cap - scanned))
        if not chunk:
            if scanned >= cap and file.read(1):
                return skipped, "cap"
            # A last line without "\n" is still a line.
            return min(count, skipped + unterminated), "end_of_file"
        scanned += len(chunk)
        newlines = chunk.count(b"\n")
        if skipped + newlines < count:
            skipped += newlines
            unterminated = not chunk.endswith(b"\n")
            continue
        end = -1
        for _ in range(count - skipped):
            end = chunk.index(b"\n", end + 1)
        file.seek(end + 1 - len(chunk), os.SEEK_CUR)
        return count, "found"
    return skipped, "found"


def _too_far(path: str, offset_line: int, lines: int) -> ReadOffsetTooFar:
    mib = READ_SCAN_MAX_BYTES // (1024 * 1024)
    return ReadOffsetTooFar(
        f"offset_line={offset_line} of {path} lies past its first {mib} MiB (which hold "
        f"{lines:,} lines): read_file scans at most that much per call to find a line; "
        f"a bash command (tail, sed -n) reaches further",
        path=path,
        limit=READ_SCAN_MAX_BYTES,
        offset_line=offset_line,
        lines=lines,
    )


def _read(workspace: Path, path: str, offset_line: int, max_bytes: int) -> str:
    with workspace_errors(path):
        # opened race-free, one component at a time (see workspace.py); hard links refused
        opened = open_for_reading(workspace, path)
        with os.fdopen(opened.fd, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            skipped, scan_end = _skip_lines(file, offset_line, cap=READ_SCAN_MAX_BYTES)
            start = file.tell()
            # only what is shown is read (plus a byte, to tell whether it was cut)
            data = b"" if scan_end == "cap" else file.read(max_bytes + 1)
    if scan_end == "cap":
        raise _too_far(path, offset_line, skipped)
    if skipped < offset_line:
        plural = "" if skipped == 1 else "s"
        raise ValueError(
            f"offset_line={offset_line} is past the end of {path} ({skipped} line{plural})"
        )
    if len(data) <= max_bytes:
        return decode_text(data, cut=False)
    window = data[:max_bytes]
    last_newline = window.rfind(b"\n")
    if last_newline >= 0:
        # End on a whole line so offset_line can pick up exactly where this stopped.
        window = window[: last_newline + 1]
        next_line = offset_line + window.count(b"\n")
        hint = f"read on with offset_line={next_line}"
    else:
        hint = f"line {offset_line + 1} alone is longer than max_bytes"
    remaining = max(size - start, len(data))
    return decode_text(window, cut=True) + truncation_note(len(window), remaining, hint)


async def read_file(data: ReadFileInput, ctx: ToolContext) -> str:
    # Disk reads off the event loop: one process serves every session.
    return await asyncio.to_thread(
        _read, ctx.sandbox.workspace, data.path, data.offset_line, data.max_bytes
    )


default = define_tool(
    description="""
        Read a UTF-8 text file in the workspace (invalid bytes show as U+FFFD). Long files are
        cut at a line boundary with a closing [truncated: ...] note that gives the
        offset_line to read on from.
    """,
    input_schema=ReadFileInput,
    execute=read_file,
)
