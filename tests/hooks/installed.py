"""Installed plugins for tests: what ``pip install`` leaves, on a temporary ``sys.path`` entry."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from eve.hooks import PLUGIN_GROUP


def install(site: Path, module: str, source: str, entry: str, *, version: str = "0.1") -> None:
    """A module and a dist-info naming its entry point (``entry`` is ``name = module:obj``)."""
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    for old in site.glob(f"{module}-*.dist-info"):
        for file in old.iterdir():
            file.unlink()
        old.rmdir()
    info = site / f"{module}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[{PLUGIN_GROUP}]\n{entry}\n")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh site directory on ``sys.path``; its ``eve_test_*`` modules are forgotten after.

    ``eve run`` in the tests runs in this process (``tests/cli/test_run_cli.py``), so it finds
    the entry points here as an installed eve finds those of ``pip install``."""
    path = tmp_path / "site"
    path.mkdir()
    monkeypatch.syspath_prepend(str(path))
    yield path
    for name in [n for n in sys.modules if n.startswith("eve_test_")]:
        del sys.modules[name]
