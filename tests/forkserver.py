"""A process that has imported eve and forks a child for each ``python -m eve …`` asked of it.

Most of what an ``eve serve`` started by a test costs is its imports: DBOS, SQLAlchemy,
psycopg, pydantic, Starlette and eve itself, about 0.9 s of CPU of the 1.05 s a server
takes from its start to its first healthy answer (measured with cProfile), paid again at
every start and restart, some 190 in the suite. The fork server pays it once per test
process: it imports what ``eve serve`` imports, then forks a child for each command it is
asked to run; the child takes the test's working directory, environment, arguments and
standard streams and runs ``eve``'s ``__main__`` as ``python -m eve`` does. Forked, a start
costs 0.08 s of CPU. ``tests/forked.py`` is the test's side (``popen``, ``run``).

The child is a real process of its own: a test kills it with SIGKILL, stops it with SIGTERM
and starts it again as before; only the interpreter's start and the imports are skipped.
What differs from a fresh interpreter is what was decided at import time, so ``accepts``
refuses an environment that differs from this process's in what the interpreter or a
preloaded module reads as it starts (those commands run as plain subprocesses). The
kernel's copy of the environment a process started with (``/proc/<pid>/environ``) is the
fork server's, so a test about that block starts its process itself. One difference is
made on purpose: DBOS polls SQLite for messages more often (``SQLITE_POLL_SECONDS``).
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

#: what ``eve`` needs loaded before it forks: the CLI, the serve command's closure, and what
#: a started server imports as it runs (its HTTP protocol, the SQLite dialect, the offline
#: model): together 99% of a server's import time, by ``-X importtime``. The MCP connection
#: pool too: an app with a connection imports it at its first turn (0.57 s of CPU, the MCP
#: SDK, anyio's backend, jsonschema), in 11 of the 160 forks of a run, sampled by py-spy.
#: And ``eve dev``'s command (prompt_toolkit): 0.06-0.07 s of CPU at each of 28 forks a run.
#: And what a child imports to compile its app (``eve serve``, ``dev`` and ``run`` compile an
#: app whose artifacts are stale): the compiler with jsonschema, the tool sets, the plugins
#: provided, anyio's backend, rich's log handler; 38 to 43 of the 99 children that logged
#: their new modules at exit in one run imported them, 0.06 s of CPU a child (none of them
#: reads the environment as it is imported)
PRELOAD = (
    "eve.cli.main",
    "eve.cli.serve_command",
    "eve.cli.dev_command",
    "uvicorn.protocols.http.h11_impl",
    "sqlalchemy.dialects.sqlite",
    "eve.models.offline",
    "eve.connections.pool",
    "eve.compiler.pipeline",
    "eve.authoring.tool_sets",
    "eve.plugins.provided",
    "anyio._backends._asyncio",
    "eve.tools",
    "rich.logging",
)
#: variables a fork cannot honour: read by the interpreter as it starts (the locale of its
#: streams, its time zone), or by a preloaded module as it is imported (dbos/_utils.py:
#: ``DBOS__CLOUD``, wcwidth's ``WCWIDTH_PYTHON``; found by recording what importing
#: ``PRELOAD`` reads of os.environ).
#: ``PYTHONUNBUFFERED`` is the exception: the child makes its streams as it says
FIXED_AT_START = (
    "PYTHON",
    "LANG",
    "LC_",
    "TZ",
    "DBOS__",
    "OTEL_PYTHON_",
    "OTEL_PROPAGATORS",
    "PSYCOPG_",
    "PYDANTIC_",
    "SSL_CERT_",
    "WCWIDTH_",
)
_HONOURED = ("PYTHONUNBUFFERED",)
#: DBOS's poll for a parked workflow's messages on SQLite (``SQLITE_POLL_SECONDS`` of
#: eve.sessions.engine, 1 s) in every eve of the tests, forked or in a test's process: each
#: stop of DBOS waited out the rest of a poll's sleep, most of a second (the suite stops it
#: 216 times in the tests' own processes alone, besides every eve process that ends). Polled
#: more often, a message from another process arrives sooner; eve wakes a receiver of its
#: own process itself either way. A poll queries once per waiting receive, so a test with
#: many parked turns keeps eve's own (tests/sessions/test_parked_turns.py).
SQLITE_POLL_SECONDS = 0.1
MESSAGE_BYTES = 1 << 20
#: the fork server's socket, for ``tests/fork_launch.py`` (``forked.module_command``)
SOCKET_ENV = "EVE_TEST_FORK_SOCKET"
#: the fork server pytest-xdist's controller started for all its workers (``ForkServer.share``)
SHARED_ENV = "EVE_TEST_FORK_SHARED"
#: the file the fork server makes beside its socket once it takes requests
READY_FILE = "ready"


def _fixed(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(FIXED_AT_START) and k not in _HONOURED}


def fixed_at_start(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``env`` a fork cannot honour (``FIXED_AT_START``)."""
    return _fixed(env)


# --- the test's side ------------------------------------------------------------------


@dataclass
class ForkServer:
    """The process that forks, seen from the test's process that started it, or from a
    worker of the run whose controller started it (``shared``: no ``proc`` of its own)."""

    proc: subprocess.Popen[bytes] | None
    path: Path
    env: dict[str, str]
    pid: int = 0

    @classmethod
    def start(cls, *, wait: bool = True) -> ForkServer:
        """The fork server started; ``wait=False``: not yet ready, ``ready`` waits for it."""
        path = Path(tempfile.mkdtemp(prefix="eve-fork-")) / "socket"
        env = dict(os.environ)
        proc = subprocess.Popen(
            [sys.executable, __file__, str(path)],
            env=env,
            stdin=subprocess.PIPE,  # its end of file tells the fork server this process left
            stdout=subprocess.PIPE,
        )
        if not wait:
            return cls(proc=proc, path=path, env=env, pid=proc.pid)
        assert proc.stdout is not None
        ready = proc.stdout.readline()
        if ready != b"ready\n":
            proc.kill()
            proc.wait()
            raise RuntimeError(f"the fork server did not start: {ready!r}")
        return cls(proc=proc, path=path, env=env, pid=proc.pid)

    def share(self) -> str:
        """What ``shared`` takes in another process (``SHARED_ENV``'s value): its socket,
        its pid and the variables it was started with that a fork cannot honour."""
        return json.dumps({"path": str(self.path), "pid": self.pid, "env": _fixed(self.env)})

    @classmethod
    def shared(cls, description: str) -> ForkServer:
        """The fork server another process started and ``share``d."""
        told = json.loads(description)
        return cls(proc=None, path=Path(told["path"]), env=told["env"], pid=told["pid"])

    def ready(self, timeout: float = 60.0) -> bool:
        """Whether the server takes requests within ``timeout`` (it makes ``READY_FILE``
        beside its socket once it listens); False when it ended first or was not in time."""
        marker = self.path.with_name(READY_FILE)
        deadline = time.monotonic() + timeout
        while not marker.exists():
            if not self.alive() or time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def alive(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        try:  # not this process's child: its state, a zombie until its parent reaps it
            with open(f"/proc/{self.pid}/stat") as stat:
                return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False

    def accepts(self, env: dict[str, str]) -> bool:
        return self.alive() and _fixed(env) == _fixed(self.env)

    def spawn(
        self,
        target: Mapping[str, object],
        *,
        cwd: str,
        env: dict[str, str],
        streams: tuple[int, int, int],
    ) -> tuple[int, socket.socket]:
        """Fork what ``target`` names (``_Request``'s ``args`` and ``code`` or ``script``;
        neither: ``python -m eve *args``) with ``streams`` as its 0, 1 and 2: its pid, and
        the socket its exit status will come on (``{"returncode": …}``, as ``Popen`` counts)."""
        request = {**target, "cwd": cwd, "env": env}
        return request_fork(str(self.path), request, streams)

    def stop(self) -> None:
        assert self.proc is not None and self.proc.stdin is not None, "stopped by its starter"
        self.proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        with contextlib.suppress(OSError):
            self.path.with_name(READY_FILE).unlink(missing_ok=True)
            self.path.unlink()
            self.path.parent.rmdir()


def request_fork(
    path: str, request: dict[str, object], streams: tuple[int, int, int]
) -> tuple[int, socket.socket]:
    """Ask the fork server at ``path`` for a child (``_Request``'s fields): its pid, and the
    socket its exit status will come on."""
    status = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    status.connect(path)
    socket.send_fds(status, [json.dumps(request).encode()], list(streams))
    return int(json.loads(status.recv(MESSAGE_BYTES))["pid"]), status


def returncode(status: socket.socket) -> int:
    """The exit status a child's status socket reports, as ``Popen`` counts it."""
    message = status.recv(MESSAGE_BYTES)
    status.close()
    # nothing: the fork server ended before its child, which only a crash does
    return int(json.loads(message)["returncode"]) if message else -signal.SIGKILL


# --- the fork server's side -------------------------------------------------------------


@dataclass
class _Request:
    args: list[str]
    cwd: str
    env: dict[str, str]
    #: what ``python -m`` runs: eve, unless ``tests/fork_launch.py`` asks for another
    module: str = "eve"
    #: a file to run as ``python SCRIPT`` does instead of a module (``fork_launch.py
    #: --script``: the example agent's stdio server; ``forked.popen``: a test's host app).
    #: Its ``__file__`` is the path as given, where the interpreter makes it absolute
    script: str = ""
    #: source to run as ``python -c CODE`` does instead of a module (``forked.popen``): a
    #: test's own small program that imports eve
    code: str = ""
    #: ``PYTHONPATH``'s entries, put on ``sys.path`` as the interpreter puts them
    path: list[str] = field(default_factory=list)


def _serve(path: str) -> _Request:
    """Fork a child per request until the test's process leaves; in a child, return what
    it was asked to run (the parent never returns: it exits when the test's process does)."""
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    quicker_sqlite_polls()
    # a fork copies only the thread that forks: nothing may run beside it
    assert threading.active_count() == 1, threading.enumerate()
    # what is loaded stays for good: the children's collections need not walk it again
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(64)
    Path(path).with_name(READY_FILE).touch()  # for the processes that did not start it
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so the wakeup fd hears it
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    selector.register(wake_read, selectors.EVENT_READ, "child")
    selector.register(sys.stdin.fileno(), selectors.EVENT_READ, "parent")
    children: dict[int, socket.socket] = {}
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        for key, _ in selector.select():
            if key.data == "parent":  # the test's process is gone (or done)
                os._exit(0)
            if key.data == "child":
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_read, 4096)
                continue
            connection, _ = listener.accept()
            message, fds, _, _ = socket.recv_fds(connection, MESSAGE_BYTES, 3)
            pid = os.fork()
            if pid == 0:
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                # closed by name, not left to the collector: it would close their numbers
                # again later, when they may be files the command opened
                selector.close()
                for open_socket in (listener, connection, *children.values()):
                    open_socket.close()
                for fd, target in zip(fds, (0, 1, 2), strict=True):
                    os.dup2(fd, target)
                os.closerange(3, os.sysconf("SC_OPEN_MAX"))  # as Popen's close_fds
                return _Request(**json.loads(message))
            for fd in fds:
                os.close(fd)
            connection.send(json.dumps({"pid": pid}).encode())
            children[pid] = connection
        _report_exits(children)


def quicker_sqlite_polls() -> None:
    """``SQLITE_POLL_SECONDS`` for the DBOS that eve launches in this process."""
    from eve.sessions import engine

    engine.SQLITE_POLL_SECONDS = SQLITE_POLL_SECONDS


def _report_exits(children: dict[int, socket.socket]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        connection = children.pop(pid, None)
        if connection is not None:
            with contextlib.suppress(OSError):  # the test may have stopped listening
                code = os.waitstatus_to_exitcode(status)
                connection.send(json.dumps({"returncode": code}).encode())
            connection.close()


def _standard_streams(unbuffered: bool) -> None:
    """New ``sys.stdin``/``stdout``/``stderr`` over descriptors 0-2, made as the interpreter
    makes them at its start (``-u`` or not): the fork server's were made for its pipes."""

    def text(fd: int, mode: str, *, line_buffering: bool, raw: bool) -> io.TextIOWrapper:
        binary = open(fd, mode, buffering=0 if raw else -1, closefd=False)  # noqa: SIM115
        model = (sys.stdin, sys.stdout, sys.stderr)[fd]
        return io.TextIOWrapper(
            binary,  # a raw FileIO under -u, as the interpreter makes it
            encoding=model.encoding,
            errors=model.errors,
            line_buffering=line_buffering,
            write_through=raw,
        )

    streams = {
        "stdin": text(0, "rb", line_buffering=False, raw=False),
        "stdout": text(1, "wb", line_buffering=os.isatty(1), raw=unbuffered),
        "stderr": text(2, "wb", line_buffering=True, raw=unbuffered),
    }
    for name, stream in streams.items():
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _become(request: _Request) -> None:
    """In the child: the process ``python -m <module> *args`` (or ``python <script> *args``,
    or ``python -c <code> *args``) would start, then run it."""
    import runpy

    os.chdir(request.cwd)
    os.environ.clear()
    os.environ.update(request.env)
    _standard_streams(unbuffered=bool(request.env.get("PYTHONUNBUFFERED")))
    if request.script:
        # as ``python SCRIPT`` puts the script's directory first, then PYTHONPATH's entries
        script = os.path.abspath(request.script)
        sys.path[0:0] = [os.path.dirname(script), *request.path]
        sys.argv = [request.script, *request.args]
        runpy.run_path(request.script, run_name="__main__")
        return
    if request.code:
        # as ``-c`` puts the empty string (the working directory) first, then PYTHONPATH's
        sys.path[0:0] = ["", *request.path]
        sys.argv = ["-c", *request.args]
        main = types.ModuleType("__main__")
        sys.modules["__main__"] = main
        exec(compile(request.code, "<string>", "exec"), main.__dict__)
        return
    # as ``-m`` puts the working directory first, then PYTHONPATH's entries
    sys.path[0:0] = [request.cwd, *request.path]
    sys.argv = ["-m", *request.args]  # runpy sets argv[0] to the module's file, as -m does
    runpy.run_module(request.module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    # this file's directory (tests/) must not shadow anything eve imports
    del sys.path[0]
    _become(_serve(sys.argv[1]))
