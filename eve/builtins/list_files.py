"""The built-in ``list_files`` tool: name what is in a workspace directory, optionally a tree.

Symlinks are listed but never descended into, which keeps a walk finite and inside the
workspace. One that resolves inside is shown as what it points to (``dir/`` or file); one
that leads outside, or cannot be resolved, is shown as ``name -> (outside the workspace)``
so the model knows why read_file will refuse it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import os
from collections.abc import Iterator
from itertools import islice
from pathlib import Path, PurePosixPath
from typing import Any

import pydantic

from eve.authoring.context import ToolContext
from eve.builtins._limits import LIST_MAX_ENTRIES
from eve.builtins.workspace import (
    DIRECTORY_FLAGS,
    Opened,
    open_for_reading,
    resolve_in_workspace,
    workspace_errors,
)
from eve.errors import WorkspaceViolation
from eve.tools import define_tool

OUTSIDE_MARK = " -> (outside the workspace)"


class ListFilesInput(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    path: str = pydantic.Field(default=".", description="The directory, relative to the workspace.")
    pattern: str = pydantic.Field(
        default="*",
        description="Glob matched against each entry's name (not its path), e.g. '*.py'.",
    )
    recursive: bool = pydantic.Field(
        default=False, description="Also list everything below, depth first."
    )


def _symlink_entry(root: Path, shown: str) -> str:
    """How a symlink is shown: as what it points to inside, or marked as leading outside."""
    try:
        target = resolve_in_workspace(root, shown)
    except WorkspaceViolation:
        return OUTSIDE_MARK
    return "/" if target.is_dir() else ""


def _walk(root: Path, start: Opened, recursive: bool) -> Iterator[tuple[str, str]]:
    """``(name, shown)`` for each entry, in sorted depth-first order (so parents come first
    and a cut listing is a prefix of the full one).

    Directories are read through descriptors, each child opened relative to its parent
    without following symlinks: a directory swapped for a symlink mid-walk is not entered.
    """
    with contextlib.ExitStack() as fds:
        stack = [(PurePosixPath(start.relative), iter(_entries(start.fd)))]
        parents = [start.fd]
        while stack:
            prefix, entries = stack[-1]
            entry = next(entries, None)
            if entry is None:
                stack.pop()
                parents.pop()
                continue
            shown = (prefix / entry.name).as_posix()
            if entry.is_symlink():
                yield entry.name, shown + _symlink_entry(root, shown)
            elif entry.is_dir(follow_symlinks=False):
                yield entry.name, shown + "/"
                if recursive:
                    try:
                        fd = os.open(entry.name, DIRECTORY_FLAGS, dir_fd=parents[-1])
                    except OSError:
                        continue  # listed, but not ours to see, or no longer a directory
                    fds.callback(os.close, fd)
                    stack.append((prefix / entry.name, iter(_entries(fd))))
                    parents.append(fd)
            else:
                yield entry.name, shown


def _entries(directory_fd: int) -> list[os.DirEntry[str]]:
    # scandir closes the descriptor it is given: hand it a copy
    with os.scandir(os.dup(directory_fd)) as entries:
        return sorted(entries, key=lambda entry: entry.name)


def _list(root: Path, path: str, pattern: str, recursive: bool) -> dict[str, Any]:
    with workspace_errors(path):
        try:
            start = open_for_reading(root, path, directory=True)
        except NotADirectoryError:
            raise NotADirectoryError(f"{path} is a file; read it with read_file") from None
        except FileNotFoundError:
            raise FileNotFoundError(f"{path}: no such directory") from None
        try:
            walk = _walk(root, start, recursive)
            matching = (shown for name, shown in walk if fnmatch.fnmatchcase(name, pattern))
            entries = list(islice(matching, LIST_MAX_ENTRIES + 1))
        finally:
            os.close(start.fd)
    listing: dict[str, Any] = {
        "path": start.relative,
        "entries": entries[:LIST_MAX_ENTRIES],
        "truncated": len(entries) > LIST_MAX_ENTRIES,
    }
    if listing["truncated"]:
        listing["note"] = (
            f"only the first {LIST_MAX_ENTRIES} entries are shown; "
            "narrow the path or the pattern to see the rest"
        )
    return listing


async def list_files(data: ListFilesInput, ctx: ToolContext) -> dict[str, Any]:
    # A large tree is many syscalls: walk it off the event loop.
    return await asyncio.to_thread(
        _list, ctx.sandbox.workspace, data.path, data.pattern, data.recursive
    )


default = define_tool(
    description=f"""
        List a directory of the workspace: sorted paths relative to the workspace,
        directories ending in '/'. With recursive=true the whole tree below, depth first.
        Symlinks are not followed; one leading outside the workspace is marked
        ' -> (outside the workspace)'. At most {LIST_MAX_ENTRIES} entries; "truncated" says
        when the listing was cut.
    """,
    input_schema=ListFilesInput,
    execute=list_files,
)
