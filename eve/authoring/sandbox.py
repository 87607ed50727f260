"""``define_sandbox``: where an agent's commands run (``agent/sandbox.py``).

A declaration is data: compiling reads it into the manifest (with the files of
``agent/sandbox/workspace/**``, copied into each session's workspace at its start) and the
runtime runs the built-in ``bash``, ``run_python`` and ``ctx.sandbox.run`` through the
provider it names. A subagent without a ``sandbox.py`` of its own inherits its parent's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from eve.errors import AuthoringError

#: ``bubblewrap``: namespaces and rlimits (Linux); ``local``: no isolation at all (unsafe)
SandboxProvider = Literal["bubblewrap", "local"]
PROVIDERS: tuple[SandboxProvider, ...] = ("bubblewrap", "local")
_HOST = re.compile(r"^(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]{0,62}\.)*[A-Za-z0-9-]{1,63}(:\d{1,5})?$")


@dataclass(frozen=True, kw_only=True)
class SandboxLimits:
    """What one command may use; each is applied to every process the command starts."""

    #: CPU seconds per process (RLIMIT_CPU): a busy loop is killed with SIGXCPU
    cpu_seconds: int = 60
    #: address space per process in MiB (RLIMIT_AS): an allocation past it fails
    memory_mb: int = 1024
    #: processes (RLIMIT_NPROC, counted per user): a fork bomb stops here
    processes: int = 256
    #: the largest file a process may write, in MiB (RLIMIT_FSIZE)
    file_size_mb: int = 100
    #: the longest a command may run, in seconds, whatever timeout it asks for (the parent
    #: kills it)
    wall_seconds: int = 600
    #: the session's whole workspace, in MiB, checked at every step boundary
    workspace_mb: int = 256


@dataclass(frozen=True, kw_only=True)
class SandboxDefinition:
    """A sandbox, as ``define_sandbox`` made it."""

    #: None: bubblewrap, and a named error at start where it is missing
    provider: SandboxProvider | None
    network: bool
    allow_hosts: tuple[str, ...]
    limits: SandboxLimits = field(default_factory=SandboxLimits)


def define_sandbox(
    *,
    provider: SandboxProvider | None = None,
    network: bool = False,
    allow_hosts: Sequence[str] = (),
    limits: SandboxLimits | None = None,
) -> SandboxDefinition:
    """Declare where the agent's commands run.

    Args:
        provider: ``"bubblewrap"`` (the default: a namespace sandbox with a read-only
            system, the session's workspace as the only writable place, no network, its own
            processes and resource limits) or ``"local"`` (no isolation: commands run as
            eve does; ``eve info`` marks it unsafe).
        network: let commands reach the network (they share the host's).
        allow_hosts: the hosts commands may reach. bubblewrap cannot filter by host, so a
            non-empty list shares the whole network, and compiling warns of it.
        limits: ``SandboxLimits(...)``: CPU time, memory, processes, file size, wall time
            and the workspace's size.
    """
    if provider is not None and provider not in PROVIDERS:
        raise AuthoringError(
            f"define_sandbox(provider={provider!r}): one of {', '.join(PROVIDERS)}"
        )
    if not isinstance(network, bool):
        raise AuthoringError(f"define_sandbox(network={network!r}): True or False")
    if isinstance(allow_hosts, str):
        raise AuthoringError("define_sandbox(allow_hosts=...): a list of host names, not one")
    for host in allow_hosts:
        if not isinstance(host, str) or not _HOST.match(host):
            raise AuthoringError(
                f"define_sandbox(allow_hosts=[..., {host!r}]): a host name such as "
                "'api.example.com', '*.example.com' or 'example.com:8443'"
            )
    limits = limits or SandboxLimits()
    _check_limits(limits)
    return SandboxDefinition(
        provider=provider, network=network, allow_hosts=tuple(allow_hosts), limits=limits
    )


def _check_limits(limits: SandboxLimits) -> None:
    if not isinstance(limits, SandboxLimits):
        raise AuthoringError("define_sandbox(limits=...): SandboxLimits(...), from eve.sandbox")
    for name, value in vars(limits).items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise AuthoringError(f"SandboxLimits({name}={value!r}): a whole number from 1")
