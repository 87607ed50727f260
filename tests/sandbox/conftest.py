"""Fixtures for the sandbox: an app with a workspace root, and tool contexts of its sessions
bound to a sandbox of either provider.

The bubblewrap tests need ``bwrap`` and user namespaces; without them they skip and say
why, unless ``EVE_REQUIRE_SANDBOX=1`` (``make test`` sets it when
``scripts/ensure-bubblewrap`` finds or installs bubblewrap), which fails them instead.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import msgspec
import pytest

from eve.authoring.context import ToolContext
from eve.errors import SandboxUnavailable
from eve.manifest import ROOT_NODE_ID, SandboxEntry, SandboxLimitsEntry
from eve.sandbox.bindings import bind_sandbox, session_directory
from eve.sandbox.bubblewrap import bwrap_program

REQUIRE_ENV = "EVE_REQUIRE_SANDBOX"
#: generous enough for any probe, small enough that a probe of a limit ends at once
LIMITS = SandboxLimitsEntry(
    cpu_seconds=10, memory_mb=512, processes=256, file_size_mb=8, wall_seconds=30, workspace_mb=16
)

#: a Python program that forks 100 children which linger: stopped at a small ``processes``
FORK_BOMB = """
import os, time
for count in range(100):
    if os.fork() == 0:
        time.sleep(3)
        os._exit(0)
print("forked", count + 1)
"""


def require_bubblewrap() -> None:
    """Skip (or fail, under EVE_REQUIRE_SANDBOX=1) when bubblewrap cannot run here."""
    try:
        bwrap_program()
    except SandboxUnavailable as error:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 and bubblewrap cannot run: {error}")
        pytest.skip(f"bubblewrap cannot run here: {error}")


@dataclass(frozen=True, kw_only=True)
class App:
    """An app root with ``.eve/`` and ``agent/`` holding secrets, and a workspace root."""

    root: Path
    workspace_root: Path

    def bind(self, provider: str, *, network: bool = False, **limits: int) -> SandboxEntry:
        if provider == "bubblewrap":
            require_bubblewrap()
        entry = SandboxEntry(
            provider="local" if provider == "local" else "bubblewrap",
            network=network,
            limits=msgspec.structs.replace(LIMITS, **limits),
            logical_path="agent/sandbox.py",
        )
        bind_sandbox(self.workspace_root, ROOT_NODE_ID, entry, app_root=self.root)
        return entry

    def ctx(self, session_id: str = "session-a") -> ToolContext:
        return ToolContext(
            session_id=session_id, call_id="c", tool_name="bash", workspace=self.workspace_root
        )

    def session_dir(self, session_id: str) -> Path:
        return session_directory(self.workspace_root, session_id)


@pytest.fixture
def app(tmp_path: Path) -> App:
    (tmp_path / ".eve").mkdir()
    (tmp_path / ".eve" / "sessions.db").write_text("every session's messages\n")
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "secret.txt").write_text("agent code\n")
    workspace_root = tmp_path / "workspace"
    workspace_root.mkdir()
    return App(root=tmp_path, workspace_root=workspace_root)
