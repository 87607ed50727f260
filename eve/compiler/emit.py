"""Write artifacts: each file replaced atomically, compile metadata last as the commit marker.

A reader that finds metadata whose recorded hashes do not match the files (a compile killed
half-way) knows the set is torn; each single file is always whole.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from eve.manifest import METADATA_PATH


def write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_artifacts(app_root: Path, artifacts: dict[str, bytes]) -> None:
    """Write every artifact (paths relative to the app root); metadata goes last."""
    for rel in sorted(artifacts, key=lambda r: r == METADATA_PATH):
        write_atomically(app_root / rel, artifacts[rel])
