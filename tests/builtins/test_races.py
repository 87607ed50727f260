"""The file tools under attack: a directory swapped for a symlink mid-call, and hard links.

Issue 12, finding 9: resolving a path and then opening it is two steps, and a directory
replaced by a symlink in between led outside the workspace a few times in a thousand.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
from pathlib import Path

import pytest

from eve.authoring.context import ToolContext
from eve.builtins import list_files, read_file, write_file
from eve.errors import WorkspaceViolation
from tests.builtins.conftest import call

#: bounded, not timed: enough swaps that the old resolve-then-open lost several times
ITERATIONS = 2000


_libc = ctypes.CDLL(None, use_errno=True)
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2  # renameat2(2): swap the two names atomically


def _exchange(a: Path, b: Path) -> None:
    if _libc.renameat2(_AT_FDCWD, bytes(a), _AT_FDCWD, bytes(b), _RENAME_EXCHANGE) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")


class Swapper:
    """Flips ``workspace/d`` between a real directory and a symlink to ``outside``.

    The names are exchanged atomically, so ``d`` always exists: a tool never sees it missing
    (which would let write_file create a fresh ``d`` and stop the race).
    """

    def __init__(self, workspace: Path, outside: Path, *, name: str) -> None:
        self.real = workspace / "d"
        self.link = workspace / "d-link"
        self.real.mkdir()
        (self.real / name).write_text("inside\n")
        self.link.symlink_to(outside, target_is_directory=True)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            _exchange(self.real, self.link)

    def __enter__(self) -> Swapper:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


async def test_a_racing_symlink_never_lets_read_file_out(
    tmp_path: Path, outside: Path, ctx: ToolContext
) -> None:
    (outside / "secret.txt").write_text("top secret\n")
    seen: set[str] = set()
    with Swapper(tmp_path, outside, name="secret.txt"):
        for _ in range(ITERATIONS):
            try:
                seen.add(await call(read_file.default, ctx, path="d/secret.txt"))
            except (WorkspaceViolation, OSError) as refusal:
                seen.add(type(refusal).__name__)
    assert "top secret\n" not in seen
    assert "inside\n" in seen  # the race was really run against real reads


async def test_a_racing_symlink_never_lets_write_file_out(
    tmp_path: Path, outside: Path, ctx: ToolContext
) -> None:
    with Swapper(tmp_path, outside, name="keep.txt"):
        for index in range(ITERATIONS):
            with contextlib.suppress(WorkspaceViolation, OSError):
                await call(write_file.default, ctx, path=f"d/new-{index}.txt", content="x")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt", "sub"]
    real = tmp_path / ("d-link" if (tmp_path / "d").is_symlink() else "d")
    assert any(p.name.startswith("new-") for p in real.iterdir())


async def test_a_racing_symlink_never_lets_list_files_out(
    tmp_path: Path, outside: Path, ctx: ToolContext
) -> None:
    seen: set[str] = set()
    with Swapper(tmp_path, outside, name="mine.txt"):
        for _ in range(ITERATIONS // 4):
            try:
                listing = await call(list_files.default, ctx, path="d", recursive=True)
            except (WorkspaceViolation, OSError):
                continue
            seen.update(listing["entries"])
    assert not any("secret" in entry or "sub" in entry for entry in seen)
    assert "d/mine.txt" in seen


async def test_a_hard_link_to_an_outside_file_is_not_read(
    tmp_path: Path, outside: Path, ctx: ToolContext
) -> None:
    os.link(outside / "secret.txt", tmp_path / "linked.txt")
    with pytest.raises(WorkspaceViolation) as raised:
        await call(read_file.default, ctx, path="linked.txt")
    assert raised.value.path == "linked.txt"
    assert "'linked.txt' has 2 hard links" in str(raised.value)
    assert str(outside) not in str(raised.value)


async def test_a_hard_link_to_an_outside_file_is_not_written(
    tmp_path: Path, outside: Path, ctx: ToolContext
) -> None:
    os.link(outside / "secret.txt", tmp_path / "linked.txt")
    with pytest.raises(WorkspaceViolation, match="hard links"):
        await call(write_file.default, ctx, path="linked.txt", content="overwritten")
    assert (outside / "secret.txt").read_text() == "top secret\n"


async def test_a_fifo_is_refused_without_blocking(tmp_path: Path, ctx: ToolContext) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(OSError, match="pipe is not a regular file"):
        await call(read_file.default, ctx, path="pipe")
