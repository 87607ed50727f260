"""The path of a shared library already loaded into this process, from ``/proc/self/maps``:
a library called through ``ctypes`` must be the very copy another module of the process
loaded (its structures are that build's), not one found again on the loader's path."""

from __future__ import annotations

from pathlib import Path


def mapped_library(prefix: str) -> str | None:
    """The first mapped ``.so`` whose file name starts with ``prefix`` (``libsqlite3``);
    None if there is none or no ``/proc`` (not Linux)."""
    try:
        lines = Path("/proc/self/maps").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        path = line.split()[-1]
        if Path(path).name.startswith(prefix) and ".so" in path:
            return path
    return None
