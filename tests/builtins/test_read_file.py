"""read_file: text, offsets, truncation at a line, and every refusal."""

from __future__ import annotations

import os
from pathlib import Path

import pydantic
import pytest

from eve.authoring.context import ToolContext
from eve.builtins import read_file
from eve.builtins._limits import READ_SCAN_MAX_BYTES
from eve.errors import ReadOffsetTooFar, WorkspaceViolation
from tests.builtins.conftest import call

READ = read_file.default


async def test_reads_utf8_text(tmp_path: Path, ctx: ToolContext) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("héllo\nworld\n", encoding="utf-8")
    assert await call(READ, ctx, path="notes/a.md") == "héllo\nworld\n"


async def test_invalid_utf8_is_replaced(tmp_path: Path, ctx: ToolContext) -> None:
    (tmp_path / "bin").write_bytes(b"ok\xff\xfeok")
    assert await call(READ, ctx, path="bin") == "ok\ufffd\ufffdok"


async def test_offset_line_skips_lines(tmp_path: Path, ctx: ToolContext) -> None:
    (tmp_path / "f.txt").write_text("one\ntwo\nthree")
    assert await call(READ, ctx, path="f.txt", offset_line=1) == "two\nthree"
    assert await call(READ, ctx, path="f.txt", offset_line=2) == "three"
    assert await call(READ, ctx, path="f.txt", offset_line=3) == ""  # exactly at the end
    with pytest.raises(ValueError) as raised:
        await call(READ, ctx, path="f.txt", offset_line=4)
    assert str(raised.value) == "offset_line=4 is past the end of f.txt (3 lines)"


async def test_offset_line_across_chunks(tmp_path: Path, ctx: ToolContext) -> None:
    lines = [f"{i:06d}" + "x" * 993 for i in range(300)]  # 1000-byte lines: ~5 read chunks
    (tmp_path / "big.txt").write_text("\n".join(lines) + "\n")
    text = await call(READ, ctx, path="big.txt", offset_line=250)
    assert text.splitlines()[0] == lines[250]
    assert len(text.splitlines()) == 50


async def test_truncates_at_a_line_and_says_how_to_read_on(
    tmp_path: Path, ctx: ToolContext
) -> None:
    (tmp_path / "f.txt").write_text("aaaa\nbbbb\ncccc\n")  # 15 bytes
    text = await call(READ, ctx, path="f.txt", max_bytes=12)
    assert text == "aaaa\nbbbb\n\n[truncated: showed 10 of 15 bytes; read on with offset_line=2]"
    rest = await call(READ, ctx, path="f.txt", offset_line=2, max_bytes=12)
    assert rest == "cccc\n"


async def test_default_cap_is_256_kib(tmp_path: Path, ctx: ToolContext) -> None:
    (tmp_path / "huge.txt").write_bytes(b"x" * 300_000)
    text = await call(READ, ctx, path="huge.txt")
    body, note = text.split("\n[truncated: ", 1)
    assert len(body) == 256 * 1024
    assert note == "showed 262,144 of 300,000 bytes; line 1 alone is longer than max_bytes]"


async def test_a_cut_never_splits_a_character(tmp_path: Path, ctx: ToolContext) -> None:
    (tmp_path / "e.txt").write_text("é" * 10)  # 20 bytes, no newline
    text = await call(READ, ctx, path="e.txt", max_bytes=5)
    assert text.startswith("éé\n[truncated: showed 5 of 20 bytes")  # 5th byte dropped, no U+FFFD


def _bytes_read_by_this_process() -> int:
    """``rchar``: every byte this process got from read() calls, in any thread."""
    io = Path("/proc/self/io").read_text()
    return int(next(line for line in io.splitlines() if line.startswith("rchar:")).split()[1])


@pytest.fixture
def huge(tmp_path: Path) -> Path:
    """A 2 GiB file (sparse: no disk used) that starts with 200 short lines, then zeros."""
    path = tmp_path / "huge.log"
    path.write_text("".join(f"line {i}\n" for i in range(200)))
    os.truncate(path, 2 * 1024**3)
    return path


async def test_a_slice_of_a_huge_file_reads_only_the_slice(huge: Path, ctx: ToolContext) -> None:
    before = _bytes_read_by_this_process()
    text = await call(READ, ctx, path=huge.name, offset_line=100, max_bytes=40)
    read = _bytes_read_by_this_process() - before
    assert text.startswith("line 100\nline 101\n")
    assert "read on with offset_line=" in text
    assert read < 1024 * 1024  # one scan chunk and the window, not 2 GiB


async def test_an_offset_past_the_scan_cap_is_refused_after_a_bounded_read(
    huge: Path, ctx: ToolContext
) -> None:
    before = _bytes_read_by_this_process()
    with pytest.raises(ReadOffsetTooFar) as raised:
        await call(READ, ctx, path=huge.name, offset_line=500)
    read = _bytes_read_by_this_process() - before
    assert READ_SCAN_MAX_BYTES <= read < READ_SCAN_MAX_BYTES + 1024 * 1024
    assert (raised.value.path, raised.value.offset_line, raised.value.lines) == (
        huge.name,
        500,
        200,
    )
    assert str(raised.value) == (
        "offset_line=500 of huge.log lies past its first 64 MiB (which hold 200 lines): "
        "read_file scans at most that much per call to find a line; a bash command "
        "(tail, sed -n) reaches further"
    )


@pytest.mark.parametrize(
    ("content", "offset_line", "outcome"),
    [
        ("aa\nbb\ncc\n", 3, ""),  # the end of the file right at the cap is the end
        ("aa\nbb\ncc\n", 4, "past the end"),
        ("aa\nbb\ncc", 3, ""),  # so is a last line without a newline
        ("aa\nbb\ncc\nd", 4, "too far"),  # one byte more than the cap
        ("aa\nbb\ncc\ndd\n", 3, "dd\n"),  # found within the cap, read past it
    ],
)
async def test_the_scan_cap_boundary(
    tmp_path: Path,
    ctx: ToolContext,
    monkeypatch: pytest.MonkeyPatch,
    content: str,
    offset_line: int,
    outcome: str,
) -> None:
    monkeypatch.setattr(read_file, "READ_SCAN_MAX_BYTES", 9)
    (tmp_path / "f.txt").write_text(content)
    if outcome == "too far":
        with pytest.raises(ReadOffsetTooFar):
            await call(READ, ctx, path="f.txt", offset_line=offset_line)
    elif outcome == "past the end":
        with pytest.raises(ValueError, match=r"is past the end of f\.txt"):
            await call(READ, ctx, path="f.txt", offset_line=offset_line)
    else:
        assert await call(READ, ctx, path="f.txt", offset_line=offset_line) == outcome


def test_max_bytes_is_bounded_by_the_schema() -> None:
    assert READ.input_model is not None
    with pytest.raises(pydantic.ValidationError):
        READ.input_model.model_validate({"path": "f", "max_bytes": 256 * 1024 + 1})
    with pytest.raises(pydantic.ValidationError):
        READ.input_model.model_validate({"path": "f", "offset_line": -1})


async def test_missing_file_names_the_path(ctx: ToolContext) -> None:
    with pytest.raises(FileNotFoundError) as raised:
        await call(READ, ctx, path="nope/missing.txt")
    assert str(raised.value) == "nope/missing.txt: No such file or directory"


async def test_directory_points_to_list_files(tmp_path: Path, ctx: ToolContext) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(IsADirectoryError, match=r"^d is a directory; list it with list_files$"):
        await call(READ, ctx, path="d")


async def test_fifo_is_refused_instead_of_blocking(tmp_path: Path, ctx: ToolContext) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(OSError, match=r"^pipe is not a regular file$"):
        await call(READ, ctx, path="pipe")


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "file-link", "dir-link"])
async def test_refuses_everything_outside(
    tmp_path: Path, outside: Path, ctx: ToolContext, kind: str
) -> None:
    (tmp_path / "leak.txt").symlink_to(outside / "secret.txt")
    (tmp_path / "door").symlink_to(outside, target_is_directory=True)
    path = {
        "dotdot": f"../{outside.name}/secret.txt",
        "absolute": str(outside / "secret.txt"),
        "file-link": "leak.txt",
        "dir-link": "door/secret.txt",
    }[kind]
    with pytest.raises(WorkspaceViolation) as raised:
        await call(READ, ctx, path=path)
    assert raised.value.path == path
    assert "outside the workspace" in str(raised.value)


async def test_symlink_inside_is_read_through(tmp_path: Path, ctx: ToolContext) -> None:
    (tmp_path / "real.txt").write_text("real content")
    (tmp_path / "alias.txt").symlink_to("real.txt")
    assert await call(READ, ctx, path="alias.txt") == "real content"
