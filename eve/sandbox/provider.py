"""``Sandbox``: one session's workspace and the provider its commands run through.

``ctx.sandbox`` in a tool is one of these. ``run(argv)`` runs a program (no shell unless
the argv names one) with the workspace as its working directory and returns a
``CommandResult``. The provider decides everything else:

- ``bubblewrap`` (``eve.sandbox.bubblewrap``): namespaces, a read-only system, the
  workspace as the one writable place, no network unless allowed, rlimits, an environment
  built from nothing.
- ``local``: the command runs as eve does, under the reaper (nothing it starts outlives
  it), with an allow-listed environment and eve's secrets blanked in /proc, and nothing
  else: it reads what eve can read and reaches what eve can reach.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, assert_never

from eve._cancellation import CancelSignal
from eve.manifest import SandboxEntry, SandboxLimitsEntry
from eve.sandbox._process_environ import command_environment, hide_secrets_from_proc
from eve.sandbox.bubblewrap import (
    INSIDE_WORKSPACE,
    explain_exit,
    sandbox_environment,
    sandboxed_argv,
)
from eve.sandbox.process import CommandResult, run_process

ProviderName = Literal["bubblewrap", "local"]
_REAPER = str(Path(__file__).with_name("_reaper.py"))
#: what an agent without ``sandbox.py`` runs under: today's ``local``, with no rlimits (the
#: wall time is the caller's timeout)
UNDECLARED_LIMITS = SandboxLimitsEntry(
    cpu_seconds=0, memory_mb=0, processes=0, file_size_mb=0, wall_seconds=600, workspace_mb=0
)


@dataclass(frozen=True, kw_only=True)
class Sandbox:
    """Where a tool call's commands run: ``workspace`` is the session's own directory."""

    workspace: Path
    provider: ProviderName
    #: whose workspace it is: under bubblewrap as root, its commands run as a user of its
    #: own (``eve.sandbox.bubblewrap.command_user``)
    session_id: str
    #: the declaration; None for an agent without ``sandbox.py`` (``local``, unbounded)
    entry: SandboxEntry | None = None
    #: the turn's cancel signal: a running command is killed when it is set
    signal: CancelSignal = field(default_factory=CancelSignal)

    @property
    def limits(self) -> SandboxLimitsEntry:
        return UNDECLARED_LIMITS if self.entry is None else self.entry.limits

    @property
    def workspace_path(self) -> str:
        """The workspace as a command sees it (``/workspace`` inside bubblewrap)."""
        match self.provider:
            case "bubblewrap":
                return INSIDE_WORKSPACE
            case "local":
                return str(self.workspace)
            case _:
                assert_never(self.provider)

    async def run(self, argv: Sequence[str], *, timeout: float = 30.0) -> CommandResult:
        """Run ``argv`` in the workspace; killed with all it started after ``timeout``
        seconds (at most the sandbox's ``wall_seconds``) or when the turn is cancelled."""
        if not argv:
            raise ValueError("Sandbox.run needs a program to run: argv is empty")
        if not self.workspace.is_dir():
            raise FileNotFoundError("the workspace directory does not exist")
        timeout = min(timeout, self.limits.wall_seconds)
        match self.provider:
            case "bubblewrap":
                assert self.entry is not None, "bubblewrap runs declared sandboxes only"
                return await self._run_bubblewrap(argv, timeout, self.entry)
            case "local":
                return await self._run_local(argv, timeout)
            case _:
                assert_never(self.provider)

    async def _run_bubblewrap(
        self, argv: Sequence[str], timeout: float, entry: SandboxEntry
    ) -> CommandResult:
        command = sandboxed_argv(
            argv,
            workspace=self.workspace,
            session_id=self.session_id,
            limits=entry.limits,
            network=entry.network,
        )
        return await run_process(
            command,
            cwd=Path("/"),
            env=sandbox_environment(),
            timeout=timeout,
            cancel=self.signal,
            explain=lambda code: explain_exit(code, entry.limits),
        )

    async def _run_local(self, argv: Sequence[str], timeout: float) -> CommandResult:
        hide_secrets_from_proc()
        # -I: no PYTHON* variables, no user site, not even the cwd; -S: the reaper needs the
        # standard library alone, and fast
        command = [sys.executable, "-I", "-S", _REAPER, *argv]
        return await run_process(
            command,
            cwd=self.workspace,
            env=command_environment(self.workspace),
            timeout=timeout,
            cancel=self.signal,
        )
