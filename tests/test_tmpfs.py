"""``tests/tmpfs.py``: the tests' temporary files go to a tmpfs only when one has room."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from tests.tmpfs import OFF_ENV, ROOT, use_tmpfs


def test_a_set_tmpdir_or_the_switch_keeps_the_disk(tmp_path: Path) -> None:
    chosen = {"TMPDIR": "/somewhere"}
    assert use_tmpfs(chosen, root=tmp_path, min_free=0) is None
    assert chosen == {"TMPDIR": "/somewhere"}
    off = {OFF_ENV: "0"}
    assert use_tmpfs(off, root=tmp_path, min_free=0) is None
    assert off == {OFF_ENV: "0"}


def test_a_missing_or_full_root_keeps_the_disk(tmp_path: Path) -> None:
    env: dict[str, str] = {}
    assert use_tmpfs(env, root=tmp_path / "absent", min_free=0) is None
    free = os.statvfs(tmp_path).f_bavail * os.statvfs(tmp_path).f_frsize
    assert use_tmpfs(env, root=tmp_path, min_free=free + (1 << 40)) is None
    assert env == {}


def test_a_root_with_room_gets_a_directory_all_may_search(tmp_path: Path) -> None:
    env: dict[str, str] = {}
    directory = use_tmpfs(env, root=tmp_path, min_free=0)
    assert directory == tmp_path / f"eve-tests-{os.getuid()}"
    assert env == {"TMPDIR": str(directory)}
    assert stat.S_IMODE(directory.stat().st_mode) == 0o755
    assert use_tmpfs({}, root=tmp_path, min_free=0) == directory  # the next run's too


def test_this_run_writes_to_the_tmpfs_when_it_has_room(tmp_path: Path) -> None:
    """What pytest was started with decides: a TMPDIR set or a tmpfs without room keeps
    the disk, and then there is nothing to see here."""
    ours = ROOT / f"eve-tests-{os.getuid()}"
    if os.environ.get("TMPDIR") != str(ours):
        pytest.skip("this run's TMPDIR was set or the machine has no tmpfs with room")
    assert tempfile.gettempdir() == str(ours)
    assert tmp_path.is_relative_to(ours)
