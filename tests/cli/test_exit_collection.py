"""An eve command freezes the heap as its process ends: the interpreter's last garbage
collection then skips everything eve imported (eve/cli/main.py says why)."""

from __future__ import annotations

import subprocess
import sys

#: an exit handler registered before eve's runs after it (atexit runs in reverse order)
CODE = """
import atexit, gc, sys
atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count() > 0))
from eve.cli.main import main
print("frozen before:", gc.get_freeze_count() > 0)
sys.argv = ["eve", "compile", "--help"]
main()
"""


def test_an_eve_command_leaves_the_last_collection_nothing_to_walk() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CODE], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "frozen before: False" in done.stdout, done.stdout
    assert "frozen at exit: True" in done.stdout, done.stdout
