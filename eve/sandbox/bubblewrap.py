"""The ``bubblewrap`` provider: a command line that runs a command in namespaces of its own.

What the command gets (bwrap(1)): a new mount namespace holding the system directories
read-only (``/usr``, ``/etc`` and the ``/bin``-style links to them), a small ``/tmp`` of
its own, a fresh ``/proc`` and ``/dev``, and the session's workspace at ``/workspace`` as
the one writable place; new user, PID, IPC, UTS and network namespaces (the network only
when the sandbox allows it); a new session (no terminal to inject into) and death with its
parent. Its environment is built here from nothing. Resource limits are rlimits set by
``prlimit`` inside the sandbox just before the command starts, so every process the
command starts inherits them.

The kernel exempts root from RLIMIT_NPROC (a fork bomb of root is never refused), so when
eve runs as root the command runs as a user of its session's own (``command_user``): a uid
and gid derived from the session id in a range no real user has, and the workspace is
handed to that user (``eve.sandbox.bindings.hand_over``). The kernel counts RLIMIT_NPROC
per uid, so a session's commands share one ``processes`` budget and no other session's
count against it; and the workspace, mode 0700, is that user's alone. bwrap then runs as
root, without a user namespace (a user namespace made by root maps root alone, so no one
could become the session's user in it): it sets up the mounts with root's right to reach
the workspace wherever it lies, and ``setpriv`` drops to the session's user, with no
capabilities left, just before the command starts. When eve is not root, bwrap runs as
eve's user in a user namespace of its own.

That is why the rlimits are set inside: the kernel counts RLIMIT_NPROC per user at each
level of user namespaces, and a user namespace takes the process limit its maker had as
the limit of its user one level up. Set before bwrap, ``processes`` would bound every
process and thread of eve's user on the machine (eve's own threads, the rest of a
developer's desktop) and bwrap could fail to start at all; set inside, it counts the
processes of this one sandbox's namespace. (As root the command runs as its session's
user without a user namespace, so there it counts every process of that session's.)
"""

from __future__ import annotations

import functools
import hashlib
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
#: when eve runs as root, each session's commands run as a uid (and gid) of the range
#: [SESSION_UID_BASE, SESSION_UID_BASE + SESSION_UIDS): just below 2^31, far above any
#: uid a system allots (Debian's ``nobody`` is 65534), and checked free when bound
SESSION_UID_BASE = 2**31 - 2**20
SESSION_UIDS = 2**20
#: the sandbox's own /tmp: memory-backed, so small
TMP_BYTES = 64 * 1024 * 1024
_MIB = 1024 * 1024
#: a CPU-time limit first sends SIGXCPU (the soft limit); the hard one a second later kills
_CPU_GRACE_SECONDS = 1
_INSTALL = (
    "install bubblewrap (Debian: apt-get install bubblewrap; scripts/ensure-bubblewrap), "
    "or declare define_sandbox(provider='local') to run commands unconfined"
)


def command_user(session_id: str) -> int | None:
    """The uid (and gid) ``session_id``'s commands run as: one of its own when eve is root
    (so its ``processes`` budget is its own), else None (eve's own, in a user namespace).

    Derived from the id, not allotted, so every worker and every restart agrees on it with
    nothing stored; two sessions of the same hash share a user (1 in 2^20 for a pair)."""
    if os.geteuid() != 0:
        return None
    digest = hashlib.sha256(session_id.encode()).digest()
    return SESSION_UID_BASE + int.from_bytes(digest[:8], "big") % SESSION_UIDS


def _namespaces(network: bool) -> list[str]:
    if os.geteuid() != 0:
        return ["--unshare-all", *(["--share-net"] if network else []), "--cap-drop", "ALL"]
    shared = [] if network else ["--unshare-net"]
    return ["--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try", *shared]


def _drop_to(user: int | None) -> list[str]:
    """What runs the command as ``user`` (when eve is root): uid, gid, no groups, and no
    capabilities, inheritable or bounding."""
    if user is None:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        raise SandboxUnavailable(
            "eve runs as root, so the sandbox runs each session's commands as a user of its "
            "own through setpriv (util-linux), and no setpriv is on PATH: install util-linux",
            provider="bubblewrap",
        )
    return [
        setpriv,
        f"--reuid={user}",
        f"--regid={user}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--",
    ]


def check_session_ids_free(
    passwd: Path = Path("/etc/passwd"), group: Path = Path("/etc/group")
) -> None:
    """``SandboxUnavailable`` when a user or group of ``passwd``/``group`` has an id of the
    sessions' range: a command running as it would own that account's files."""
    end = SESSION_UID_BASE + SESSION_UIDS
    for table in (passwd, group):
        lines = table.read_text(errors="replace").splitlines() if table.is_file() else []
        for line in lines:
            fields = line.split(":")
            if len(fields) > 2 and fields[2].isdigit() and SESSION_UID_BASE <= int(fields[2]) < end:
                raise SandboxUnavailable(
                    f"{table} names {fields[0]!r} with id {fields[2]}, inside the ids "
                    f"[{SESSION_UID_BASE}, {end}) the sandbox gives sessions' commands when "
                    "eve runs as root: give that account another id",
                    provider="bubblewrap",
                )


def sandbox_environment() -> dict[str, str]:
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
    if os.geteuid() == 0:
        check_session_ids_free()
    probe = [
        found,
        *_namespaces(network=False),
        "--die-with-parent",
        *_system_mounts(),
        *_drop_to(command_user("probe")),
        "true",
    ]
    done = subprocess.run(probe, capture_output=True, text=True, check=False, timeout=30)
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
    argv: Sequence[str],
    *,
    workspace: Path,
    session_id: str,
    limits: SandboxLimitsEntry,
    network: bool,
) -> list[str]:
    """The command line that runs ``argv`` in the sandbox as ``session_id``'s user
    (``command_user``), ``workspace`` mounted writable."""
    prlimit = shutil.which("prlimit") or "prlimit"
    return [
        bwrap_program(),
        *_namespaces(network),
        "--die-with-parent",
        "--new-session",
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
        # inside, not before bwrap: a user namespace made under a process limit counts
        # every process of eve's user against it (see the module's docstring)
        prlimit,
        *limit_arguments(limits),
        "--",
        *_drop_to(command_user(session_id)),
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
