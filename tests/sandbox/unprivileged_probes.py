"""The escape probes, run through ``Sandbox.run`` by a process that is not root.

``tests/sandbox/test_unprivileged.py`` starts this file as uid/gid 65534 with a scratch
directory of that user's as its one argument, and reads one JSON object from its stdout:
each probe's ``CommandResult.as_dict()`` by name, plus what the probes need to be judged
(this process's pid, the scratch paths).

It runs as a script, not under pytest, because pytest and the suite's fixtures run as
root: only a whole process of another user shows what bwrap does for a non-root eve.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import threading
from pathlib import Path
from typing import Any

import msgspec

from eve.manifest import SandboxEntry
from eve.sandbox.provider import Sandbox
from tests.sandbox.conftest import FORK_BOMB, LIMITS

#: the sandbox's process limit, and how many threads this process holds meanwhile: more,
#: as a busy eve would, and the limit must count the command's processes, not eve's
PROCESSES = 40
HELD_THREADS = 60


def _hold_threads(release: threading.Event) -> None:
    for _ in range(HELD_THREADS):
        threading.Thread(target=release.wait, daemon=True).start()


async def _probes(scratch: Path) -> dict[str, Any]:
    limits = msgspec.structs.replace(LIMITS, processes=PROCESSES)
    sessions = scratch / "sessions"
    own, other = sessions / "session-a", sessions / "session-b"
    for directory in (own, other):
        directory.mkdir(parents=True)
    (other / "notes.txt").write_text("private\n")
    outside = scratch / "planted.txt"

    def sandbox(provider: str = "bubblewrap", *, network: bool = False) -> Sandbox:
        entry = SandboxEntry(
            provider="local" if provider == "local" else "bubblewrap",
            network=network,
            limits=limits,
            logical_path="agent/sandbox.py",
        )
        return Sandbox(
            workspace=own,
            provider=entry.provider or "bubblewrap",
            session_id=own.name,
            entry=entry,
        )

    def shell(command: str) -> list[str]:
        return ["bash", "-c", command]

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        connect = shell(f"exec 3<>/dev/tcp/127.0.0.1/{server.getsockname()[1]} && echo connected")
        runs = {
            "who": sandbox().run(shell("id -u; grep CapEff /proc/self/status; pwd")),
            "environment": sandbox().run(
                shell(f"env; cat /proc/{os.getpid()}/environ | tr '\\0' '\\n'")
            ),
            "write_outside": sandbox().run(
                shell(f"echo planted > {outside}; touch /usr/bin/planted; echo mine > mine.txt")
            ),
            "network": sandbox().run(connect),
            "network_allowed": sandbox(network=True).run(connect),
            "other_session": sandbox().run(
                shell(f"cat ../session-b/notes.txt; cat {other}/notes.txt")
            ),
            "other_session_local": sandbox("local").run(shell(f"cat {other}/notes.txt")),
            "fork_bomb": sandbox().run(["python3", "-c", FORK_BOMB], timeout=20),
        }
        # one after another, as a turn runs its commands; the threads held all along
        results = {name: (await run).as_dict() for name, run in runs.items()}
    return {
        "pid": os.getpid(),
        "uid": os.getuid(),
        "threads": threading.active_count(),
        "processes": PROCESSES,
        "outside": str(outside),
        "planted": outside.exists(),
        "mine": (own / "mine.txt").read_text() if (own / "mine.txt").exists() else None,
        "results": results,
    }


def main() -> None:
    scratch = Path(sys.argv[1])
    release = threading.Event()
    _hold_threads(release)
    try:
        print(json.dumps(asyncio.run(_probes(scratch))))
    finally:
        release.set()


if __name__ == "__main__":
    main()
