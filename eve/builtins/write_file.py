"""The built-in ``write_file`` tool: create or replace a text file in the workspace, atomically."""

from __future__ import annotations

import asyncio
import os
import secrets
from pathlib import Path
from typing import Any

import pydantic

from eve.authoring.context import ToolContext
from eve.builtins.workspace import resolve_in_workspace, workspace_errors, workspace_relative
from eve.tools import define_tool


class WriteFileInput(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    path: str = pydantic.Field(
        description="The file, relative to the workspace; missing parent directories are created."
    )
    content: str = pydantic.Field(description="The whole new content, written as UTF-8.")


def _write(target: Path, path: str, content: str) -> int:
    data = content.encode("utf-8")
    with workspace_errors(path):
        if target.is_dir():
            raise IsADirectoryError(f"{path} is a directory")
        # ``target`` is resolved inside the workspace, so every parent created is inside too.
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            keep_mode: int | None = target.stat().st_mode & 0o7777
        except FileNotFoundError:
            keep_mode = None
        # Readers see the old file or the new one, never half of it: write aside, then rename.
        temp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
        # 0o666 through the umask, like a plain open(); mkstemp's 0o600 would change the mode.
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            if keep_mode is not None:
                os.chmod(temp, keep_mode)
            os.replace(temp, target)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
    return len(data)


async def write_file(data: WriteFileInput, ctx: ToolContext) -> dict[str, Any]:
    target = resolve_in_workspace(ctx.workspace, data.path)
    # Disk writes (and the fsync) off the event loop: one process serves every session.
    written = await asyncio.to_thread(_write, target, data.path, data.content)
    return {"path": workspace_relative(ctx.workspace, target), "bytes_written": written}


default = define_tool(
    description="""
        Write a UTF-8 text file in the workspace, replacing it whole if it exists and creating
        missing parent directories. Returns the path written and the number of bytes.
    """,
    input_schema=WriteFileInput,
    execute=write_file,
)
