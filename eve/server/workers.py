"""Running the API: one uvicorn server per worker process, restarted under the same name.

A worker's name is its DBOS executor id. When a worker dies the supervisor starts a new
process with the same name, and DBOS recovers the turns the dead one held; a worker on
another machine adopts them instead if no one restarts it (see ``sessions.engine``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import uvicorn
from starlette.applications import Starlette


@dataclass(frozen=True, kw_only=True)
class Listen:
    host: str
    port: int


def bind(listen: Listen) -> socket.socket:
    family = socket.AF_INET6 if ":" in listen.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((listen.host, listen.port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


async def serve_on(app: Starlette, sock: socket.socket) -> None:
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    await uvicorn.Server(config).serve(sockets=[sock])


def supervise(workers: int, sock: socket.socket, run_worker: Callable[[int], None]) -> int:
    """Fork ``workers`` processes running ``run_worker(index)``; restart any that die."""
    children: dict[int, int] = {}
    stopping = False

    def start(index: int) -> None:
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            try:
                run_worker(index)
            finally:
                os._exit(0)
        children[pid] = index

    def stop(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True
        for pid in children:
            _signal(pid, signal.SIGTERM)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    for index in range(workers):
        start(index)
    while children:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        found = children.pop(pid, None)
        if found is None or stopping:
            continue
        index = found
        print(
            f"eve serve: worker {index} (pid {pid}) exited with status {status}; restarting it",
            file=sys.stderr,
            flush=True,
        )
        time.sleep(0.2)
        start(index)
    sock.close()
    return 0


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)
