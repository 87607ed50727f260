"""Which sandbox a tool call gets: each node's declaration, bound when its agent is set up,
and each session's workspace directory, made on first use from the sandbox's seed files.

``bind_sandbox`` is called once per node by the agent's setup (``eve._agent_setup``), which
is where ``eve run``, ``dev`` and ``serve`` refuse to start when the provider cannot run
here. ``sandbox_for(ctx)`` (``ctx.sandbox``) finds the binding by the call's workspace root
and node: the loop hands every call those two already, so the loop needs no change to give
tools a sandbox. A node without a declaration gets ``local`` over the shared workspace,
which is how eve ran before sandboxes.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from eve.manifest import SandboxEntry
from eve.sandbox.bubblewrap import bwrap_program, command_user
from eve.sandbox.provider import ProviderName, Sandbox

if TYPE_CHECKING:  # ToolContext.sandbox imports this module: no cycle at run time
    from eve.authoring.context import ToolContext

#: where the sessions' workspaces live under a sandboxed agent's workspace root
SESSIONS_DIR = "sessions"
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


@dataclass(frozen=True, kw_only=True)
class SandboxBinding:
    """A node's sandbox as this process runs it."""

    entry: SandboxEntry
    provider: ProviderName
    #: where the seed files are read from
    app_root: Path

    def seeds(self) -> dict[str, Path]:
        """Each seed file by its path inside the workspace."""
        prefix = self.entry.logical_path.removesuffix("sandbox.py") + "sandbox/workspace/"
        return {
            path.removeprefix(prefix): self.app_root / path for path in self.entry.workspace_files
        }


_bound: dict[tuple[Path, str], SandboxBinding] = {}


def provider_of(entry: SandboxEntry) -> ProviderName:
    """The provider ``entry`` runs under here; ``SandboxUnavailable`` when bubblewrap (named,
    or the default) cannot run on this machine."""
    if entry.provider == "local":
        return "local"
    bwrap_program()  # refuses now, not at the first command
    return "bubblewrap"


def bind_sandbox(
    workspace_root: Path, node_id: str, entry: SandboxEntry | None, *, app_root: Path
) -> SandboxBinding | None:
    """Bind ``node_id``'s sandbox to the agent whose workspace root is ``workspace_root``
    (None: the node declares none, and any earlier binding is dropped)."""
    key = (workspace_root.resolve(), node_id)
    if entry is None:
        _bound.pop(key, None)
        return None
    binding = SandboxBinding(entry=entry, provider=provider_of(entry), app_root=app_root)
    _bound[key] = binding
    return binding


def binding_of(workspace_root: Path, node_id: str) -> SandboxBinding | None:
    if not _bound:
        # no agent in this process has a sandbox: no path to resolve (a system call per
        # part of it, and every turn asks)
        return None
    return _bound.get((workspace_root.resolve(), node_id))


def bound_roots() -> list[Path]:
    """The workspace roots of the sandboxes bound in this process (their sessions'
    directories are under them)."""
    return sorted({root for root, _ in _bound})


def session_directory(workspace_root: Path, session_id: str) -> Path:
    """The workspace of ``session_id`` under a sandboxed agent's workspace root."""
    if not _SAFE_ID.match(session_id):
        raise ValueError(f"session id {session_id!r} cannot name a workspace directory")
    return workspace_root.resolve() / SESSIONS_DIR / session_id


def sandbox_for(ctx: ToolContext) -> Sandbox:
    """The sandbox of the call ``ctx`` serves, its session's workspace made if missing."""
    binding = binding_of(ctx.workspace, ctx.node_id)
    if binding is None:
        return Sandbox(
            workspace=ctx.workspace, provider="local", session_id=ctx.session_id, signal=ctx.signal
        )
    directory = session_directory(ctx.workspace, ctx.session_id)
    if not directory.is_dir():
        seed_workspace(directory, binding, ctx.session_id)
    return Sandbox(
        workspace=directory,
        provider=binding.provider,
        session_id=ctx.session_id,
        entry=binding.entry,
        signal=ctx.signal,
    )


def seed_workspace(directory: Path, binding: SandboxBinding, session_id: str) -> None:
    """Make ``directory`` ``session_id``'s copy of the seed files, all at once: built aside
    and renamed, so two calls racing to make it never see it half made."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    aside = directory.parent / f".{directory.name}.{secrets.token_hex(4)}"
    aside.mkdir()
    try:
        for relative, source in binding.seeds().items():
            target = aside / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
        hand_over(aside, binding.provider, session_id)
        with contextlib.suppress(OSError):  # made meanwhile by another call: keep that one
            aside.rename(directory)
    finally:
        shutil.rmtree(aside, ignore_errors=True)


def hand_over(directory: Path, provider: ProviderName, session_id: str) -> None:
    """Give ``directory`` and all below it to the user bubblewrap runs ``session_id``'s
    commands as (when eve is root, one of the session's own), so its commands can change
    what eve wrote there, and close the directory to every other user (mode 0700), so no
    other session's command could read it even were the path reachable. Every writer of a
    session's workspace but the file tools (which give what they make the owner of the
    directory it is in: ``eve.builtins.workspace.take_owner``) ends here."""
    user = command_user(session_id) if provider == "bubblewrap" else None
    if user is None:
        return
    os.chown(directory, user, user)
    os.chmod(directory, 0o700)
    for root, dirs, files in os.walk(directory):
        for name in dirs + files:
            os.chown(os.path.join(root, name), user, user, follow_symlinks=False)
