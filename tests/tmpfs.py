"""The tests' temporary files on a tmpfs (``/dev/shm``) when the machine has one to spare.

Most of what the tests write is SQLite files, apps and logs under pytest's ``tmp_path``: on
a disk's filesystem each SQLite commit is an fsync (Python's sqlite3 default, ``FULL``) and
each file a journal entry, system CPU the suite is bound by. One process making 30
databases of 100 commits and 3,000 small files: 0.49-0.65 s of system CPU and 1.75-1.91 s
on this machine's ext4, 0.04 s and 0.08-0.09 s on its tmpfs. Nothing a test proves depends
on the disk: a killed process leaves its writes in the page cache on either.

Applied once, in the process pytest starts (``pytest_configure``): its pytest-xdist workers
and every program the tests start inherit ``TMPDIR``. A ``TMPDIR`` already set is kept, and
``EVE_TEST_TMPFS=0`` keeps the disk.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import MutableMapping
from pathlib import Path

#: where Linux mounts a tmpfs for shared memory
ROOT = Path("/dev/shm")
#: ``EVE_TEST_TMPFS=0``: the temporary files stay where ``tempfile`` puts them
OFF_ENV = "EVE_TEST_TMPFS"
#: what a run needs free there: its ``tmp_path`` directories stay until the run ends
#: (pytest keeps the last three runs'), and a container's 64 MB one would not hold them
MIN_FREE_BYTES = 4 << 30


def use_tmpfs(
    env: MutableMapping[str, str] = os.environ,
    *,
    root: Path = ROOT,
    min_free: int = MIN_FREE_BYTES,
) -> Path | None:
    """Point ``TMPDIR`` in ``env`` at a directory of this user's on ``root``; that
    directory, or None when ``TMPDIR`` is set already, the tmpfs is off, missing, mounted
    noexec (the tests run the programs they write) or has less than ``min_free`` free."""
    if env.get(OFF_ENV) == "0" or "TMPDIR" in env:
        return None
    try:
        stats = os.statvfs(root)
    except OSError:
        return None
    if stats.f_flag & os.ST_NOEXEC or stats.f_bavail * stats.f_frsize < min_free:
        return None
    directory = root / f"eve-tests-{os.getuid()}"
    try:
        directory.mkdir(exist_ok=True)
        # searchable by all, as /tmp is: tests/postgres.py runs the server as another user
        directory.chmod(0o755)
    except OSError:
        return None
    env["TMPDIR"] = str(directory)
    if env is os.environ:
        tempfile.tempdir = None  # gettempdir() caches what it found first
    return directory
