"""A TCP port on 127.0.0.1 for a server a test starts, chosen outside the kernel's ephemeral
range.

A port the kernel hands out for ``bind(("127.0.0.1", 0))`` comes from its ephemeral range
(``/proc/sys/net/ipv4/ip_local_port_range``, 32768-60999 by default), the range every
outgoing connection takes its local port from too. Between the test closing its probe socket
and the server binding the port, any of the suite's thousands of connections (six workers,
PostgreSQL, httpx clients) could take it: "address already in use", seen once a few runs in
the full-disk soak. Below that range only another test's choice can meet ours, at random
among some 12,000 ports, and a port found taken is passed over.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

#: below the kernel's ephemeral range, above the ports services commonly take
_LOWEST = 20_000
_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def _ephemeral_start() -> int:
    try:
        return int(_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default; elsewhere a guess that only widens the choice


def free_port() -> int:
    """A port that nothing listens on now, seldom one an outgoing connection will take."""
    highest = max(_ephemeral_start() - 1, _LOWEST + 100)
    for _ in range(50):
        port = random.randint(_LOWEST, highest)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue  # taken: another
            return port
    with socket.socket() as sock:  # a crowded machine: the kernel's choice, as before
        sock.bind(("127.0.0.1", 0))
        found: int = sock.getsockname()[1]
        return found
