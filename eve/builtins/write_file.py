"""The built-in ``write_file`` tool: create or replace a text file in the workspace, atomically."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
from pathlib import Path
from typing import Any

import pydantic

from eve.authoring.context import ToolContext
from eve.builtins._limits import WRITE_MAX_BYTES
from eve.builtins.workspace import slot_for_writing, take_owner, workspace_errors
from eve.errors import WriteTooLarge
from eve.tools import define_tool


class WriteFileInput(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    path: str = pydantic.Field(
        description="The file, relative to the workspace; missing parent directories are created."
    )
    content: str = pydantic.Field(description="The whole new content, written as UTF-8.")


def _encoded(path: str, content: str) -> bytes:
    """``content`` as UTF-8, or ``WriteTooLarge`` when that is over the cap."""
    data = content.encode("utf-8")
    if len(data) > WRITE_MAX_BYTES:
        raise WriteTooLarge(
            f"{path} was not written: its content is {len(data):,} bytes, over write_file's "
            f"cap of {WRITE_MAX_BYTES:,}; split it over several files",
            path=path,
            limit=WRITE_MAX_BYTES,
            size=len(data),
        )
    return data


def _write(workspace: Path, path: str, content: str) -> tuple[str, int]:
    # refused before anything is touched: no parent directory, no temp file
    data = _encoded(path, content)
    # Every name below is relative to the directory's descriptor, found race-free (see
    # workspace.py): a directory swapped for a symlink meanwhile cannot move the write out.
    with workspace_errors(path), slot_for_writing(workspace, path) as slot:
        # Readers see the old file or the new one, never half of it: write aside, then rename.
        temp = f".{slot.name}.{secrets.token_hex(6)}.tmp"
        # 0o666 through the umask, like a plain open(); mkstemp's 0o600 would change the mode.
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(temp, flags, 0o666, dir_fd=slot.dir_fd)
        try:
            take_owner(slot.dir_fd, temp)
            with os.fdopen(fd, "wb") as file:
                file.write(data)
                file.flush()
                if slot.mode is not None:
                    os.fchmod(file.fileno(), slot.mode)
                os.fsync(file.fileno())
            # rename replaces the name itself: a symlink put there since is replaced, not followed
            os.replace(temp, slot.name, src_dir_fd=slot.dir_fd, dst_dir_fd=slot.dir_fd)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp, dir_fd=slot.dir_fd)
            raise
        return slot.relative, len(data)


async def write_file(data: WriteFileInput, ctx: ToolContext) -> dict[str, Any]:
    # Disk writes (and the fsync) off the event loop: one process serves every session.
    relative, written = await asyncio.to_thread(
        _write, ctx.sandbox.workspace, data.path, data.content
    )
    return {"path": relative, "bytes_written": written}


default = define_tool(
    description=f"""
        Write a UTF-8 text file in the workspace, replacing it whole if it exists and creating
        missing parent directories. Returns the path written and the number of bytes. At
        most {WRITE_MAX_BYTES // 1024 // 1024} MiB per file.
    """,
    input_schema=WriteFileInput,
    execute=write_file,
    # it changes the workspace the step's other calls read: it runs alone, in its turn
    parallel=False,
)
