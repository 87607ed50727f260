"""Confine the built-in tools to their workspace: resolve what the model asked for, or refuse.

The model names files with strings it chose; a string is only trusted once it resolves (every
symlink followed, ``..`` applied after each link as the OS would) to a path inside the
resolved workspace. ``resolve_in_workspace`` is the one place that decides that.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from eve.errors import WorkspaceViolation


def resolve_in_workspace(workspace: Path, path: str) -> Path:
    """The real path ``path`` names inside ``workspace``; ``WorkspaceViolation`` if it is not.

    ``path`` is relative to the workspace, or absolute if it lies within it. Symlinks anywhere
    along it are followed — dangling ones too, to where they would lead — so the returned
    path contains no symlink and the caller operates on it, not on the string it was given.
    """
    if "\0" in path:
        raise WorkspaceViolation(f"{path!r} contains a NUL byte", path=path)
    root = workspace.resolve()
    asked = Path(path)
    target = asked if asked.is_absolute() else root / asked
    try:
        resolved = target.resolve()
    except (OSError, RuntimeError):
        # Python 3.11 raises RuntimeError for a symlink loop; where a loop leads is unknowable.
        raise WorkspaceViolation(
            f"{path!r} cannot be resolved (a symlink loop?)", path=path
        ) from None
    if resolved.is_relative_to(root):
        return resolved
    # Tell the model *why*, so it does not retry the same thing in another spelling.
    if not Path(os.path.normpath(target)).is_relative_to(root):
        how = "is an absolute path" if asked.is_absolute() else "climbs with '..'"
        raise WorkspaceViolation(f"{path!r} {how} outside the workspace", path=path)
    raise WorkspaceViolation(f"{path!r} leads outside the workspace through a symlink", path=path)


def workspace_relative(workspace: Path, resolved: Path) -> str:
    """How a path returned by ``resolve_in_workspace`` is shown: POSIX, relative, ``.`` for root."""
    return resolved.relative_to(workspace.resolve()).as_posix()


@contextmanager
def workspace_errors(path: str) -> Iterator[None]:
    """Re-raise OS errors naming ``path`` as the model wrote it, not the host's absolute path.

    The loop shows a tool's exception text to the model; the absolute path would leak where
    the workspace lives and would not be a path the model can use.
    """
    try:
        yield
    except OSError as error:
        if error.strerror is None:  # raised with our own message, which already names it
            raise
        raise type(error)(f"{path}: {error.strerror}") from None
