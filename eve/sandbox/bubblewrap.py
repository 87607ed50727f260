"""The ``bubblewrap`` provider: a command line that runs a command in namespaces of its own.

What the command gets (bwrap(1)): a new mount namespace holding the system directories
read-only (``/usr``, ``/etc`` and the ``/bin``-style links to them), a small ``/tmp`` of
its own, a fresh ``/proc`` and ``/dev``, and the session's workspace at ``/workspace`` as
the one writable place; new user, PID, IPC, UTS and network namespaces (the network only
when the sandbox allows it); a new session (no terminal to inject into) and death with its
parent. Its environment is built here from nothing. Resource limits are rlimits set by
``prlimit`` before bwrap starts, so every process inside inherits them.

The kernel exempts root from RLIMIT_NPROC (a fork bomb of root is never refused), so when
eve runs as root the command runs as ``nobody`` instead, and the workspace is handed to
that user (``workspace_owner``).
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path

from eve.errors import SandboxUnavailable
from eve.manifest import SandboxLimitsEntry

#: where the workspace is inside the sandbox
INSIDE_WORKSPACE = "/workspace"
#: the system directories a command sees, read-only (a link among them is recreated)
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
#: the user a command runs as when eve runs as root (Debian's ``nobody``)
NOBODY = 65534
#: the sandbox's own /tmp: memory-backed, so small
TMP_BYTES = 64 * 1024 * 1024
_MIB = 1024 * 1024
#: a CPU-time limit first sends SIGXCPU (the soft limit); the hard one a second later kills
_CPU_GRACE_SECONDS = 1
_INSTALL = (
    "install bubblewrap (Debian: apt-get install bubblewrap; scripts/ensure-bubblewrap), "
    "or declare define_sandbox(provider='local') to run commands unconfined"
)


def run_as() -> int | None:
    """The uid (and gid) commands run as: ``nobody`` when eve is root, else eve's own."""
    return NOBODY if os.geteuid() == 0 else None


def command_environment() -> dict[str, str]:
    """A command's whole environment: nothing of eve's is passed on."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": INSIDE_WORKSPACE,
        "LANG": "C.UTF-8",
        "TMPDIR": "/tmp",
        "TERM": "dumb",
    }


@functools.cache
def bwrap_program() -> str:
    """The path of a bwrap that can make its namespaces here (checked once per process);
    ``SandboxUnavailable`` saying why not."""
    found = shutil.which("bwrap")
    if found is None:
        raise SandboxUnavailable(
            f"the sandbox's provider is bubblewrap, and no bwrap is on PATH: {_INSTALL}",
            provider="bubblewrap",
        )
    probe = [found, "--unshare-all", "--die-with-parent", *_system_mounts(), "true"]
    user = run_as()
    done = subprocess.run(
        probe, capture_output=True, text=True, check=False, timeout=30, user=user, group=user
    )
    if done.returncode != 0:
        why = done.stderr.strip() or f"exit status {done.returncode}"
        raise SandboxUnavailable(
            f"bwrap cannot make its namespaces here ({why}); user namespaces may be off "
            f"(sysctl kernel.unprivileged_userns_clone): {_INSTALL}",
            provider="bubblewrap",
        )
    return found


def _system_mounts() -> list[str]:
    mounts: list[str] = []
    for path in SYSTEM_PATHS:
        if os.path.islink(path):
            mounts += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            mounts += ["--ro-bind", path, path]
    return mounts


def limit_arguments(limits: SandboxLimitsEntry) -> list[str]:
    """``prlimit`` options for ``limits`` (soft:hard)."""
    cpu = limits.cpu_seconds
    memory = limits.memory_mb * _MIB
    file_size = limits.file_size_mb * _MIB
    return [
        f"--cpu={cpu}:{cpu + _CPU_GRACE_SECONDS}",
        f"--as={memory}:{memory}",
        f"--nproc={limits.processes}:{limits.processes}",
        f"--fsize={file_size}:{file_size}",
        "--core=0:0",
    ]


def sandboxed_argv(
    argv: Sequence[str], *, workspace: Path, limits: SandboxLimitsEntry, network: bool
) -> list[str]:
    """The command line that runs ``argv`` in the sandbox, ``workspace`` mounted writable."""
    prlimit = shutil.which("prlimit") or "prlimit"
    return [
        prlimit,
        *limit_arguments(limits),
        bwrap_program(),
        "--unshare-all",
        *(["--share-net"] if network else []),
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--hostname",
        "sandbox",
        *_system_mounts(),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(TMP_BYTES),
        "--tmpfs",
        "/tmp",
        "--bind",
        str(workspace),
        INSIDE_WORKSPACE,
        "--chdir",
        INSIDE_WORKSPACE,
        "--",
        *argv,
    ]


def explain_exit(code: int | None, limits: SandboxLimitsEntry) -> str | None:
    """What a limit did when ``code`` says a process died of it (a shell reports a child's
    death by signal N as 128 + N; bwrap passes the status on)."""
    if code is None:
        return None
    number = -code if code < 0 else code - 128
    if number == signal.SIGXCPU:
        return f"a process was stopped at the sandbox's CPU time limit ({limits.cpu_seconds} s)"
    if number == signal.SIGXFSZ:
        return (
            "a process was stopped at the sandbox's file size limit "
            f"({limits.file_size_mb} MiB per file)"
        )
    return None
