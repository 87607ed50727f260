"""list_files: sorting, recursion, patterns, symlinks, the cap and refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from eve.authoring.context import ToolContext
from eve.builtins import list_files
from eve.builtins._limits import LIST_MAX_ENTRIES
from eve.errors import WorkspaceViolation
from tests.builtins.conftest import call

LIST = list_files.default


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for rel in ["b.txt", "a.txt", "src/main.py", "src/util/io.py", "src/util/notes.md", "a/x.py"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(rel)
    (tmp_path / "empty").mkdir()
    return tmp_path


async def test_lists_one_level_sorted_with_dirs_marked(tree: Path, ctx: ToolContext) -> None:
    assert await call(LIST, ctx) == {
        "path": ".",
        "entries": ["a/", "a.txt", "b.txt", "empty/", "src/"],
        "truncated": False,
    }


async def test_recursive_is_depth_first_and_sorted(tree: Path, ctx: ToolContext) -> None:
    result = await call(LIST, ctx, recursive=True)
    assert result["entries"] == [
        "a/",
        "a/x.py",
        "a.txt",
        "b.txt",
        "empty/",
        "src/",
        "src/main.py",
        "src/util/",
        "src/util/io.py",
        "src/util/notes.md",
    ]


async def test_subdirectory_entries_are_relative_to_the_workspace(
    tree: Path, ctx: ToolContext
) -> None:
    result = await call(LIST, ctx, path="src/util")
    assert result == {
        "path": "src/util",
        "entries": ["src/util/io.py", "src/util/notes.md"],
        "truncated": False,
    }


async def test_pattern_matches_names_at_any_depth(tree: Path, ctx: ToolContext) -> None:
    result = await call(LIST, ctx, pattern="*.py", recursive=True)
    assert result["entries"] == ["a/x.py", "src/main.py", "src/util/io.py"]
    assert (await call(LIST, ctx, pattern="*.py"))["entries"] == []


async def test_symlinks_are_listed_not_followed(
    tmp_path: Path, outside: Path, ctx: ToolContext
) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f.txt").write_text("x")
    (tmp_path / "alias").symlink_to("real", target_is_directory=True)
    (tmp_path / "f-link").symlink_to("real/f.txt")
    (tmp_path / "door").symlink_to(outside, target_is_directory=True)
    (tmp_path / "leak.txt").symlink_to(outside / "secret.txt")
    (tmp_path / "dangling").symlink_to(outside / "gone")
    result = await call(LIST, ctx, recursive=True)
    assert result["entries"] == [
        "alias/",  # a directory inside: shown as one, but not walked twice
        "dangling -> (outside the workspace)",
        "door -> (outside the workspace)",
        "f-link",
        "leak.txt -> (outside the workspace)",
        "real/",
        "real/f.txt",
    ]
    assert all("secret" not in entry for entry in result["entries"])


async def test_symlink_loop_inside_terminates(tmp_path: Path, ctx: ToolContext) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "up").symlink_to("..", target_is_directory=True)
    assert (await call(LIST, ctx, recursive=True))["entries"] == ["d/", "d/up/"]


async def test_caps_the_count_and_says_so(tmp_path: Path, ctx: ToolContext) -> None:
    for i in range(LIST_MAX_ENTRIES + 5):
        (tmp_path / f"f{i:05d}").write_text("")
    result = await call(LIST, ctx)
    assert len(result["entries"]) == LIST_MAX_ENTRIES
    assert result["entries"][-1] == f"f{LIST_MAX_ENTRIES - 1:05d}"
    assert result["truncated"] is True
    assert "narrow the path or the pattern" in result["note"]


async def test_a_file_or_missing_path_fails_clearly(tree: Path, ctx: ToolContext) -> None:
    with pytest.raises(NotADirectoryError, match=r"^a.txt is a file; read it with read_file$"):
        await call(LIST, ctx, path="a.txt")
    with pytest.raises(FileNotFoundError, match=r"^nope: no such directory$"):
        await call(LIST, ctx, path="nope")


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "dir-link"])
async def test_refuses_everything_outside(
    tmp_path: Path, outside: Path, ctx: ToolContext, kind: str
) -> None:
    (tmp_path / "door").symlink_to(outside, target_is_directory=True)
    path = {"dotdot": "..", "absolute": str(outside), "dir-link": "door"}[kind]
    with pytest.raises(WorkspaceViolation) as raised:
        await call(LIST, ctx, path=path)
    assert raised.value.path == path
