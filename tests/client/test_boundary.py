"""``eve.client`` runs where the agent does not: it never loads the loop or the sessions."""

from __future__ import annotations

import subprocess
import sys

LOADED = """
import sys
import eve.client
print(sorted(m for m in sys.modules if m.startswith(("eve.execution", "eve.sessions", "dbos"))))
"""


def test_the_client_imports_neither_the_loop_nor_the_sessions() -> None:
    done = subprocess.run(
        [sys.executable, "-c", LOADED], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"
