"""resolve_in_workspace and the shared output limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from eve.builtins._limits import capped_text, decode_text, truncation_note
from eve.builtins.workspace import resolve_in_workspace, workspace_errors, workspace_relative
from eve.errors import WorkspaceViolation


def refused(workspace: Path, path: str) -> WorkspaceViolation:
    with pytest.raises(WorkspaceViolation) as raised:
        resolve_in_workspace(workspace, path)
    assert raised.value.path == path
    return raised.value


def test_relative_paths_resolve_inside(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    root = tmp_path.resolve()
    assert resolve_in_workspace(tmp_path, "a/b.txt") == root / "a" / "b.txt"
    assert resolve_in_workspace(tmp_path, "not/yet/there.txt") == root / "not/yet/there.txt"
    assert resolve_in_workspace(tmp_path, ".") == root
    assert resolve_in_workspace(tmp_path, "") == root
    assert resolve_in_workspace(tmp_path, "a/../a/./b.txt") == root / "a" / "b.txt"


def test_absolute_path_inside_is_allowed(tmp_path: Path) -> None:
    inside = str(tmp_path.resolve() / "x.txt")
    assert resolve_in_workspace(tmp_path, inside) == tmp_path.resolve() / "x.txt"


def test_dotdot_escape_is_refused(tmp_path: Path) -> None:
    error = refused(tmp_path, "../escape")
    assert str(error) == "'../escape' climbs with '..' outside the workspace"
    assert error.code == "workspace_violation"
    assert refused(tmp_path, "a/../../b").path == "a/../../b"


def test_absolute_path_outside_is_refused(tmp_path: Path, outside: Path) -> None:
    path = str(outside / "secret.txt")
    assert str(refused(tmp_path, path)) == f"{path!r} is an absolute path outside the workspace"
    assert str(refused(tmp_path, "/etc/passwd")).endswith("outside the workspace")


def test_symlinked_file_leading_outside_is_refused(tmp_path: Path, outside: Path) -> None:
    (tmp_path / "leak.txt").symlink_to(outside / "secret.txt")
    error = refused(tmp_path, "leak.txt")
    assert str(error) == "'leak.txt' leads outside the workspace through a symlink"
    assert str(outside) not in str(error)


def test_symlinked_directory_leading_outside_is_refused(tmp_path: Path, outside: Path) -> None:
    (tmp_path / "door").symlink_to(outside, target_is_directory=True)
    refused(tmp_path, "door")
    refused(tmp_path, "door/secret.txt")
    refused(tmp_path, "door/new-file.txt")  # not there yet, still outside
    # ``..`` applies after the link, as the OS would: door/.. is outside's parent
    refused(tmp_path, "door/../anything")


def test_dangling_symlink_leading_outside_is_refused(tmp_path: Path, outside: Path) -> None:
    (tmp_path / "dangling").symlink_to(outside / "does-not-exist")
    refused(tmp_path, "dangling")


def test_symlink_deep_in_the_path_is_checked(tmp_path: Path, outside: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "c").symlink_to(outside / "sub", target_is_directory=True)
    refused(tmp_path, "a/b/c/deep.txt")


def test_symlinks_staying_inside_are_followed(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f.txt").write_text("x")
    (tmp_path / "alias").symlink_to("real", target_is_directory=True)
    (tmp_path / "f-link").symlink_to("real/f.txt")
    (tmp_path / "later").symlink_to("real/not-yet.txt")
    root = tmp_path.resolve()
    assert resolve_in_workspace(tmp_path, "alias/f.txt") == root / "real" / "f.txt"
    assert resolve_in_workspace(tmp_path, "f-link") == root / "real" / "f.txt"
    assert resolve_in_workspace(tmp_path, "later") == root / "real" / "not-yet.txt"


def test_workspace_reached_through_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "ws").symlink_to("real", target_is_directory=True)
    workspace = tmp_path / "ws"
    assert resolve_in_workspace(workspace, "x") == (tmp_path / "real" / "x").resolve()
    assert resolve_in_workspace(workspace, str(workspace / "x")) == (tmp_path / "real/x").resolve()
    refused(workspace, "../elsewhere")


def test_symlink_loop_is_refused(tmp_path: Path) -> None:
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    assert "cannot be resolved" in str(refused(tmp_path, "loop1"))


def test_nul_byte_is_refused(tmp_path: Path) -> None:
    assert "NUL" in str(refused(tmp_path, "a\0b"))


def test_workspace_relative_is_posix_and_dot_for_root(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    assert workspace_relative(tmp_path, root / "a" / "b") == "a/b"
    assert workspace_relative(tmp_path, root) == "."


def test_workspace_errors_name_the_path_as_given(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as raised, workspace_errors("notes/x.txt"):
        (tmp_path / "notes" / "x.txt").read_text()
    assert str(raised.value) == "notes/x.txt: No such file or directory"
    assert str(tmp_path) not in str(raised.value)
    # our own messages pass through untouched
    with pytest.raises(IsADirectoryError, match=r"^mine$"), workspace_errors("p"):
        raise IsADirectoryError("mine")


def test_decode_text_drops_a_character_split_by_a_cut() -> None:
    data = "aé".encode()  # b"a\xc3\xa9"
    assert decode_text(data[:2], cut=True) == "a"
    assert decode_text(data[:2], cut=False) == "a\ufffd"
    assert decode_text(b"a\xffb", cut=True) == "a\ufffdb"  # invalid bytes inside still shown


def test_capped_text_notes_what_it_cut() -> None:
    assert capped_text(b"hello", 5, 5) == "hello"
    assert capped_text(b"hello world", 11, 5) == "hello\n[truncated: showed 5 of 11 bytes]"
    assert truncation_note(1, 2_000, "go on") == "\n[truncated: showed 1 of 2,000 bytes; go on]"
