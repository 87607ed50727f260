"""A TCP port on 127.0.0.1 for a server a test starts, chosen outside the kernel's ephemeral
range.

A port the kernel hands out for ``bind(("127.0.0.1", 0))`` comes from its ephemeral range
(``/proc/sys/net/ipv4/ip_local_port_range``, 32768-60999 by default), the range every
outgoing connection takes its local port from too. Between the test closing its probe socket
and the server binding the port, any of the suite's thousands of connections (six workers,
PostgreSQL, httpx clients) could take it: "address already in use", seen once a few runs in
the full-disk soak. Below that range only another test's choice can meet ours, at random
among some 12,000 ports, and a port found taken is passed over.

Between the choice and the bind (a server's start, seconds on a loaded machine; the whole
test for a port chosen for nothing to listen on) the probe of another worker would find the
port free as well. So each pytest-xdist worker chooses in a slice of the range of its own,
and a process never hands out again a port it handed out recently.
"""

from __future__ import annotations

import os
import random
import socket
from collections import deque
from pathlib import Path

#: below the kernel's ephemeral range, above the ports services commonly take
_LOWEST = 20_000
_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: the ports this process handed out last, not handed out again while they are here
_handed: deque[int] = deque(maxlen=256)


def _ephemeral_start() -> int:
    try:
        return int(_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default; elsewhere a guess that only widens the choice


def worker_slice(worker: str, count: int, lowest: int, highest: int) -> tuple[int, int]:
    """The ports from ``lowest`` to ``highest`` that xdist worker ``worker`` (``gw3``) of
    ``count`` chooses among: all of them outside xdist."""
    if count <= 1 or not (worker.startswith("gw") and worker[2:].isdigit()):
        return lowest, highest
    size = (highest - lowest + 1) // count
    start = lowest + (int(worker[2:]) % count) * size
    return start, start + size - 1


def free_port() -> int:
    """A port that nothing listens on now, seldom one an outgoing connection will take, and
    none another worker of the run or this process lately chose."""
    lowest, highest = worker_slice(
        os.environ.get("PYTEST_XDIST_WORKER", ""),
        int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1),
        _LOWEST,
        max(_ephemeral_start() - 1, _LOWEST + 100),
    )
    for _ in range(50):
        port = random.randint(lowest, highest)
        if port in _handed:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue  # taken: another
            _handed.append(port)
            return port
    with socket.socket() as sock:  # a crowded machine: the kernel's choice, as before
        sock.bind(("127.0.0.1", 0))
        found: int = sock.getsockname()[1]
        return found
