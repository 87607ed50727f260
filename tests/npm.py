"""Node packages a test runs, installed once per test session from a lock file (``npm ci``);
the tests that need them skip when node or npm is absent."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

import pytest


def npm_ci(directory: Path, *, needed_for: str) -> None:
    """``npm ci`` in ``directory`` unless its packages are current; skips without Node."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip(f"node and npm are needed to run {needed_for} (install Node.js)")
    # pytest-xdist workers install at once: one runs npm ci, the others wait for it
    with (directory / ".install.lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        installed = directory / "node_modules" / ".package-lock.json"
        lock = directory / "package-lock.json"
        if installed.exists() and installed.stat().st_mtime >= lock.stat().st_mtime:
            return
        done = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund"],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, f"npm ci failed:\n{done.stdout}\n{done.stderr}"
