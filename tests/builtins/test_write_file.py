"""write_file: atomic replace, parent directories, modes, and every refusal."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from eve.authoring.context import ToolContext
from eve.builtins import write_file
from eve.builtins._limits import WRITE_MAX_BYTES
from eve.errors import WorkspaceViolation, WriteTooLarge
from tests.builtins.conftest import call

WRITE = write_file.default


async def test_writes_and_reports_bytes(tmp_path: Path, ctx: ToolContext) -> None:
    result = await call(WRITE, ctx, path="hello.txt", content="héllo\n")
    assert result == {"path": "hello.txt", "bytes_written": 7}
    assert (tmp_path / "hello.txt").read_text(encoding="utf-8") == "héllo\n"


async def test_creates_nested_directories(tmp_path: Path, ctx: ToolContext) -> None:
    result = await call(WRITE, ctx, path="a/b/c/deep.txt", content="x")
    assert result == {"path": "a/b/c/deep.txt", "bytes_written": 1}
    assert (tmp_path / "a" / "b" / "c" / "deep.txt").read_text() == "x"


async def test_replaces_whole_and_leaves_no_temp_files(tmp_path: Path, ctx: ToolContext) -> None:
    target = tmp_path / "f.txt"
    target.write_text("a much longer old content\n")
    target.chmod(0o640)
    await call(WRITE, ctx, path="f.txt", content="new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # the temp file's mode did not win
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]


async def test_new_file_gets_the_umask_mode(tmp_path: Path, ctx: ToolContext) -> None:
    umask = os.umask(0o022)
    try:
        await call(WRITE, ctx, path="n.txt", content="")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "n.txt").stat().st_mode) == 0o644


async def test_content_up_to_the_cap_is_written(tmp_path: Path, ctx: ToolContext) -> None:
    result = await call(WRITE, ctx, path="full.txt", content="x" * WRITE_MAX_BYTES)
    assert result["bytes_written"] == WRITE_MAX_BYTES == (tmp_path / "full.txt").stat().st_size


@pytest.mark.parametrize("content", ["x" * (WRITE_MAX_BYTES + 1), "é" * (WRITE_MAX_BYTES // 2 + 1)])
async def test_content_over_the_cap_is_refused_before_anything_is_written(
    tmp_path: Path, ctx: ToolContext, content: str
) -> None:
    (tmp_path / "keep.txt").write_text("old")
    for path in ("keep.txt", "new/dir/big.txt"):
        with pytest.raises(WriteTooLarge) as raised:
            await call(WRITE, ctx, path=path, content=content)
        size = len(content.encode())
        assert (raised.value.path, raised.value.size, raised.value.limit) == (
            path,
            size,
            WRITE_MAX_BYTES,
        )
        assert str(raised.value) == (
            f"{path} was not written: its content is {size:,} bytes, over write_file's cap "
            f"of 1,048,576; split it over several files"
        )
    assert (tmp_path / "keep.txt").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]  # no directory, no temp


async def test_writing_onto_a_directory_fails_clearly(tmp_path: Path, ctx: ToolContext) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(IsADirectoryError, match=r"^d is a directory$"):
        await call(WRITE, ctx, path="d", content="x")


async def test_parent_that_is_a_file_names_the_path(tmp_path: Path, ctx: ToolContext) -> None:
    (tmp_path / "plain").write_text("")
    with pytest.raises(OSError) as raised:
        await call(WRITE, ctx, path="plain/child.txt", content="x")
    assert str(raised.value).startswith("plain/child.txt: ")
    assert str(tmp_path) not in str(raised.value)


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "file-link", "dir-link", "dangling"])
async def test_refuses_everything_outside(
    tmp_path: Path, outside: Path, ctx: ToolContext, kind: str
) -> None:
    (tmp_path / "leak.txt").symlink_to(outside / "secret.txt")
    (tmp_path / "door").symlink_to(outside, target_is_directory=True)
    (tmp_path / "trap.txt").symlink_to(outside / "planted.txt")
    path = {
        "dotdot": "../escape.txt",
        "absolute": str(outside / "new.txt"),
        "file-link": "leak.txt",
        "dir-link": "door/new.txt",
        "dangling": "trap.txt",
    }[kind]
    with pytest.raises(WorkspaceViolation) as raised:
        await call(WRITE, ctx, path=path, content="pwned")
    assert raised.value.path == path
    assert (outside / "secret.txt").read_text() == "top secret\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt", "sub"]
    assert not (tmp_path.parent / "escape.txt").exists()


async def test_symlink_inside_writes_its_target(tmp_path: Path, ctx: ToolContext) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to("real", target_is_directory=True)
    (tmp_path / "later.txt").symlink_to("real/later.txt")
    assert await call(WRITE, ctx, path="alias/f.txt", content="via alias") == {
        "path": "real/f.txt",
        "bytes_written": 9,
    }
    await call(WRITE, ctx, path="later.txt", content="made")
    assert (tmp_path / "real" / "f.txt").read_text() == "via alias"
    assert (tmp_path / "real" / "later.txt").read_text() == "made"
    assert (tmp_path / "later.txt").is_symlink()  # the link stays a link
