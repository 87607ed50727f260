"""Running the API: one uvicorn server per worker process, restarted under the same name.

A worker's name is its DBOS executor id. When a worker dies the supervisor starts a new
process with the same name, and DBOS recovers the turns the dead one held; a worker on
another machine adopts them instead if no one restarts it (see ``sessions.engine``).

The supervisor restarts only what can recover. A worker that fails before it ever served
(a database it cannot reach, a model it cannot load) would fail the same way on every
restart, and so would a worker that keeps dying (``CRASH_LOOP_EXITS`` exits within
``CRASH_LOOP_SECONDS``): then the supervisor stops every worker and exits non-zero.
Worker 0 starts alone, and the others once it serves, so a failure to start is found once.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import os
import select
import signal
import socket
import sys
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import NoReturn

import uvicorn
from starlette.applications import Starlette

from eve._redact import redact
from eve.errors import ServerConfigError
from eve.server.acceptor import Acceptor, accepts_one_per_turn
from eve.server.followers import end_streams
from eve.server.serving import serving_protocol
from eve.server.slices import slice_ms

#: a worker index that exits this many times within ``CRASH_LOOP_SECONDS`` is crash-looping
CRASH_LOOP_EXITS = 5
CRASH_LOOP_SECONDS = 60.0
#: seconds between a serving worker's death and its restart
RESTART_DELAY = 0.2
#: seconds a stopping worker gives open requests to finish before it cancels them (each
#: cancelled one is a traceback from uvicorn). A followed event stream never finishes by
#: itself (a client, a dev UI tab, follows until it leaves), so ``_Server.shutdown`` ends
#: those first, as complete responses; their clients reconnect from the next index
#: they need
GRACEFUL_SHUTDOWN_SECONDS = 3
#: seconds an idle kept-alive connection stays open (uvicorn's default is 5): a chat
#: client's next message comes after it has read the last answer, often more than 5 s
#: later, and a connection closed meanwhile cost an accept, a close and a new one per
#: message. Above the 60 s idle timeout common to load balancers, so one never sends a
#: request on a connection the server is closing (nginx keeps 75 s too)
KEEP_ALIVE_SECONDS = 75

#: ``run_worker(index, ready)``: serve as worker ``index``, calling ``ready()`` once serving
RunWorker = Callable[[int, Callable[[], None]], None]


@dataclass(frozen=True, kw_only=True)
class Listen:
    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def bind(listen: Listen) -> socket.socket:
    """The socket every worker accepts on; ``ServerConfigError`` when it cannot be had."""
    family = socket.AF_INET6 if ":" in listen.host else socket.AF_INET
    try:
        sock = socket.socket(family, socket.SOCK_STREAM)
    except OSError as error:
        raise ServerConfigError(_bind_failure(listen, error)) from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # accepted connections inherit it: uvicorn writes a response's head and body
        # separately, and with Nagle on, the body of every answer on a kept-alive
        # connection waited ~40 ms for the client's delayed ACK of the head
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((listen.host, listen.port))
        sock.listen(2048)
    except OSError as error:
        sock.close()
        raise ServerConfigError(_bind_failure(listen, error)) from None
    # never inheritable (Python's default, said here because it matters): the workers are
    # forked, which shares it anyway, and a program a worker starts (an MCP server on
    # stdio, a sandboxed tool) must not hold the port after the worker dies: uvloop's
    # spawn closes no descriptors, so an inheritable one kept a restarted server from
    # listening until that program exited
    sock.set_inheritable(False)
    return sock


def _bind_failure(listen: Listen, error: OSError) -> str:
    reason = error.strerror or str(error)
    reason = reason[:1].lower() + reason[1:]
    if error.errno == errno.EADDRINUSE:
        advice = "another process listens there; stop it or choose another --port"
    elif error.errno == errno.EACCES:
        advice = "ports below 1024 need privileges; choose another --port"
    else:
        advice = "check --host and --port"
    return f"cannot listen on {listen}: {reason}; {advice}"


class _Server(uvicorn.Server):
    """uvicorn's server, calling ``on_ready`` once it accepts connections, and ending the
    app's followed streams when it stops (they would never end by themselves)."""

    def __init__(
        self, config: uvicorn.Config, app: Starlette, on_ready: Callable[[], None]
    ) -> None:
        super().__init__(config)
        self._app = app
        self._on_ready = on_ready
        self._acceptors: list[Acceptor] = []

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        loop = asyncio.get_running_loop()
        # where the loop accepts one connection per turn (uvloop), uvicorn starts the app
        # and makes no server of its own: the acceptors accept, in batches
        # (``acceptor.py``), with the protocol uvicorn's server would have used
        batched = sockets is not None and accepts_one_per_turn(loop)
        await super().startup(sockets=[] if batched else sockets)
        if not self.started:
            return
        if batched:
            config = self.config
            # each request's task marked as serving it (``serving_loop.py``)
            protocol_class = serving_protocol(config.http_protocol_class)

            def protocol() -> asyncio.Protocol:
                made: asyncio.Protocol = protocol_class(
                    config=config, server_state=self.server_state, app_state=self.lifespan.state
                )
                return made

            self._acceptors = [Acceptor(loop, sock, protocol) for sock in sockets or []]
        self._on_ready()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for acceptor in self._acceptors:
            acceptor.close()  # before uvicorn closes the sockets
        end_streams(self._app)
        await super().shutdown(sockets=sockets)


def serving_loop(
    env: Mapping[str, str] = os.environ,
) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """What makes a worker's event loop: uvloop's where it is installed, else None
    (asyncio's own loop; uvloop does not build on Windows), running what serves a request
    before the turns' work (``serving_loop.py``) unless ``EVE_REQUEST_SLICE_MS`` is off
    (a worker on PostgreSQL stops that once it knows, unless the setting is given:
    ``slices.slices_for_backend``).

    A turn hands work to threads and back a dozen times (each a wake-up of the loop) and
    streams its events in several socket writes; on uvloop those cost a fraction of what
    asyncio's selector loop spends (``bench/scale``). Only the worker's main loop: a loop
    another library starts in a thread of its own stays asyncio's.
    """
    try:
        import uvloop
    except ImportError:
        return None
    ms = slice_ms(env)
    if ms is None:
        return uvloop.new_event_loop
    from eve.server.serving_loop import new_serving_loop

    return functools.partial(new_serving_loop, ms / 1000)


def server_config(app: Starlette) -> uvicorn.Config:
    """How a worker's uvicorn serves ``app``."""
    return uvicorn.Config(
        app,
        # httptools' parser where it is installed (a dependency of eve), else h11's
        http="auto",
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
    )


async def serve_on(
    app: Starlette, sock: socket.socket, *, on_ready: Callable[[], None] = lambda: None
) -> None:
    await _Server(server_config(app), app, on_ready).serve(sockets=[sock])


def supervise(
    workers: int,
    sock: socket.socket,
    run_worker: RunWorker,
    *,
    crash_loop_exits: int = CRASH_LOOP_EXITS,
    crash_loop_seconds: float = CRASH_LOOP_SECONDS,
) -> int:
    """Fork ``workers`` processes running ``run_worker``; restart any that die after serving.

    Returns the exit status for the whole server: 0 after SIGINT or SIGTERM, else the
    status of the worker that failed before serving or crash-looped (1 if a signal ended it).
    """
    supervisor = _Supervisor(
        sock=sock,
        run_worker=run_worker,
        crash_loop_exits=crash_loop_exits,
        crash_loop_seconds=crash_loop_seconds,
    )
    return supervisor.run(workers)


@dataclass(frozen=True, kw_only=True)
class _Child:
    index: int
    #: read end of a pipe the worker writes one byte to once it serves; a pipe rather
    #: than shared memory because the byte is still there after the worker is gone
    ready_fd: int


@dataclass(kw_only=True)
class _Supervisor:
    sock: socket.socket
    run_worker: RunWorker
    crash_loop_exits: int
    crash_loop_seconds: float
    children: dict[int, _Child] = field(default_factory=dict)
    #: worker indexes that served at least once: only those are worth restarting
    served: set[int] = field(default_factory=set)
    exits: dict[int, deque[float]] = field(default_factory=dict)
    stopping: bool = False
    status: int = 0

    def run(self, workers: int) -> int:
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)
        # worker 0 first: the first start on a new database creates the tables, and workers
        # creating them at once collide. The others start once it serves, or not at all.
        first = self.start(0)
        if self._await_ready(first):
            for index in range(1, workers):
                self.start(index)
        while self.children:
            try:
                pid, status = os.wait()
            except ChildProcessError:
                break
            except InterruptedError:
                continue
            self.reap(pid, status)
        self.sock.close()
        return self.status

    def start(self, index: int) -> int:
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            for child in self.children.values():
                os.close(child.ready_fd)
            _run_child(index, self.run_worker, write_fd)
        os.close(write_fd)
        os.set_blocking(read_fd, False)
        self.children[pid] = _Child(index=index, ready_fd=read_fd)
        return pid

    def _await_ready(self, pid: int) -> bool:
        """Wait until worker ``pid`` serves (True), or exits or the supervisor is told to stop."""
        child = self.children[pid]
        while not self.stopping:
            readable, _, _ = select.select([child.ready_fd], [], [], 0.5)
            if readable and _read_ready(child.ready_fd):
                self.served.add(child.index)
                return True
            if readable or _exited(pid):  # end of file: the worker is gone; os.wait reaps it
                return False
        return False

    def reap(self, pid: int, status: int) -> None:
        child = self.children.pop(pid, None)
        if child is None:
            return
        if _read_ready(child.ready_fd):
            self.served.add(child.index)
        os.close(child.ready_fd)
        if self.stopping:
            return
        index, code = child.index, _exit_status(status)
        said = f"worker {index} (pid {pid}) exited with status {code}"
        if index not in self.served:
            self.fail(f"{said} before it was ready; stopping all workers (see its error)", status)
        elif self._crash_looping(index):
            self.fail(
                f"{said}, {self.crash_loop_exits} times within {self.crash_loop_seconds:g} s: "
                "it is crash-looping; stopping all workers (see its error)",
                status,
            )
        else:
            _say(f"{said}; restarting it")
            time.sleep(RESTART_DELAY)
            if not self.stopping:  # a SIGTERM may have come during the pause
                self.start(index)

    def _crash_looping(self, index: int) -> bool:
        now = time.monotonic()
        recent = self.exits.setdefault(index, deque())
        recent.append(now)
        while now - recent[0] > self.crash_loop_seconds:
            recent.popleft()
        return len(recent) >= self.crash_loop_exits

    def fail(self, message: str, status: int) -> None:
        _say(message)
        code = os.waitstatus_to_exitcode(status)
        self.status = code if code > 0 else 1
        self.stop_all()

    def stop_all(self) -> None:
        self.stopping = True
        for pid in self.children:
            _signal(pid, signal.SIGTERM)

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.stop_all()


def _run_child(index: int, run_worker: RunWorker, ready_fd: int) -> NoReturn:
    """In the forked worker: serve, then leave with a status that says how it went."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    status = 1
    try:
        run_worker(index, lambda: _tell_ready(ready_fd))
        status = 0
    except SystemExit as exit_:
        status = _system_exit_status(exit_.code)
    except BaseException as error:
        # one line, as the CLI prints an eve error: a traceback may carry secrets, and
        # every worker failing the same way would print one
        message = f"worker {index} failed: {type(error).__name__}: {error}"
        print(f"eve: {redact(message)}", file=sys.stderr)
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        # never return into the supervisor's code, nor run its atexit handlers
        os._exit(status)


def _tell_ready(ready_fd: int) -> None:
    with contextlib.suppress(OSError):
        os.write(ready_fd, b"r")


def _read_ready(ready_fd: int) -> bool:
    try:
        return os.read(ready_fd, 1) == b"r"
    except BlockingIOError:  # nothing written yet, and the write end still open
        return False


def _exited(pid: int) -> bool:
    """Whether child ``pid`` has exited, leaving it for ``os.wait`` to reap (WNOWAIT)."""
    try:
        found = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return found is not None


def _system_exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # as Python does for sys.exit("message")
    return 1


def _exit_status(status: int) -> int:
    """The exit code, or the number of the signal that ended the process."""
    if os.WIFSIGNALED(status):
        return os.WTERMSIG(status)
    return os.waitstatus_to_exitcode(status)


def _say(message: str) -> None:
    print(f"eve serve: {message}", file=sys.stderr, flush=True)


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)
