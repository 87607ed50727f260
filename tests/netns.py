"""Hosts of their own on this machine: network namespaces joined to a bridge.

``Hosts.create(n)`` makes a bridge in the root namespace (``10.213.X.1/24``) and ``n``
network namespaces, each with one veth interface on the bridge at an address of its own
(``10.213.X.10``, ``.11``, …) and its loopback. A process started with ``exec_prefix(i)``
(``ip netns exec <namespace>``) sees only its own interfaces, as on another machine: it
binds its own address and reaches the others (a PostgreSQL listening on the bridge's
address) over the bridge. ``close()`` deletes the namespaces and the bridge.

Creating them needs root (CAP_NET_ADMIN and the right to mount a namespace) and iproute2's
``ip``; ``unavailable()`` says why they cannot be made here, for a test to skip with.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
from dataclasses import dataclass, field

#: the /16 the bridges take their /24 from: private, and unlikely to be a real network's
PREFIX = "10.213"


class NamespacesUnavailable(RuntimeError):
    """Namespaces cannot be made on this machine; the message says why."""


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False, timeout=30)
    if done.returncode != 0:
        raise NamespacesUnavailable(f"`ip {' '.join(args)}` failed: {done.stderr.strip()}")


def _used_subnets() -> set[str]:
    shown = subprocess.run(
        ["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True, check=False
    ).stdout
    return {part.rsplit(".", 1)[0] for part in shown.split() if part.startswith(f"{PREFIX}.")}


def unavailable() -> str | None:
    """Why no namespace can be made here, or None when they can."""
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed"
    if os.geteuid() != 0:
        return "making network namespaces needs root"
    probe = f"eve-probe-{secrets.token_hex(3)}"
    try:
        _ip("netns", "add", probe)
    except NamespacesUnavailable as error:
        return str(error)
    _ip("netns", "del", probe)
    return None


@dataclass(kw_only=True)
class Hosts:
    tag: str
    subnet: str
    count: int
    made: list[str] = field(default_factory=list)

    @property
    def bridge(self) -> str:
        return f"evb{self.tag}"

    @property
    def gateway(self) -> str:
        """The root namespace's address on the bridge (where a shared database listens)."""
        return f"{self.subnet}.1"

    def address(self, index: int) -> str:
        return f"{self.subnet}.{10 + index}"

    def namespace(self, index: int) -> str:
        return f"eve-{self.tag}-{index}"

    def exec_prefix(self, index: int) -> list[str]:
        return ["ip", "netns", "exec", self.namespace(index)]

    @classmethod
    def create(cls, count: int) -> Hosts:
        used = _used_subnets()
        free = [f"{PREFIX}.{n}" for n in range(1, 255) if f"{PREFIX}.{n}" not in used]
        if not free:
            raise NamespacesUnavailable(f"every {PREFIX}.N.0/24 subnet is taken")
        hosts = cls(tag=secrets.token_hex(3), subnet=secrets.choice(free), count=count)
        try:
            hosts._make()
        except BaseException:
            hosts.close()
            raise
        return hosts

    def _make(self) -> None:
        _ip("link", "add", self.bridge, "type", "bridge")
        self.made.append(self.bridge)
        _ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for index in range(self.count):
            namespace, outer, inner = self.namespace(index), f"evh{self.tag}{index}", "eth0"
            _ip("netns", "add", namespace)
            self.made.append(namespace)
            _ip("link", "add", outer, "type", "veth", "peer", "name", f"evp{self.tag}{index}")
            _ip("link", "set", f"evp{self.tag}{index}", "netns", namespace)
            _ip("-n", namespace, "link", "set", f"evp{self.tag}{index}", "name", inner)
            _ip("-n", namespace, "addr", "add", f"{self.address(index)}/24", "dev", inner)
            _ip("-n", namespace, "link", "set", inner, "up")
            _ip("-n", namespace, "link", "set", "lo", "up")
            _ip("link", "set", outer, "master", self.bridge)
            _ip("link", "set", outer, "up")

    def close(self) -> None:
        """Delete what ``create`` made (a namespace's veth pair goes with it)."""
        for name in reversed(self.made):
            with contextlib.suppress(NamespacesUnavailable):
                if name == self.bridge:
                    _ip("link", "del", name)
                else:
                    _ip("netns", "del", name)
        self.made.clear()
