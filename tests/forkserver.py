"""``python -m eve …`` as a fork of one process that has already imported eve.

Most of what an ``eve serve`` started by a test costs is its imports: DBOS, SQLAlchemy,
psycopg, pydantic, Starlette and eve itself, about 0.9 s of CPU of the 1.1 s a server
takes from its start to its first healthy answer (measured with cProfile), paid again at
every start and restart of the ~140 the suite makes. A fork server pays it once per test
worker: a process imports what ``eve serve`` imports, then forks a child for each command
it is asked to run, which takes the test's working directory, environment, arguments and
standard streams and runs ``eve``'s ``__main__`` as ``python -m eve`` would.

The child is a real process of its own, so a test still kills it with SIGKILL, stops it
with SIGTERM and starts it again; only the interpreter's start and the imports are
skipped. What differs from a fresh interpreter is what could be decided at import time:
so a command whose environment changes the interpreter (``PYTHON*``) or a variable a
preloaded module reads as it is imported (``DBOS__*``) runs as a plain subprocess, and so
does every command when ``EVE_TEST_FORK=0``. The kernel's copy of the environment a
process started with (``/proc/<pid>/environ``) is the fork server's, so a test about that
block starts its process itself.

The child is the fork server's, not the test's: ``ForkedProcess`` is the part of
``subprocess.Popen`` the tests use (``pid``, ``poll``, ``wait``, signals, ``returncode``),
the exit status coming over the socket the child was asked for on.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

#: what ``eve`` needs loaded before it forks: the CLI and the serve command's closure
PRELOAD = ("eve.cli.main", "eve.cli.serve_command")
#: ``EVE_TEST_FORK=0`` starts every command as a fresh interpreter, as before
ENABLED_ENV = "EVE_TEST_FORK"
#: variables a fork cannot honour: read by the interpreter as it starts (the locale of its
#: streams, its time zone), or by a preloaded module as it is imported (dbos/_utils.py:
#: ``DBOS__CLOUD``; found by recording what importing ``PRELOAD`` reads of os.environ)
_FIXED_AT_START = (
    "PYTHON",
    "LANG",
    "LC_",
    "TZ",
    "DBOS__",
    "OTEL_PYTHON_",
    "PSYCOPG_",
    "PYDANTIC_",
    "SSL_CERT_",
)
_MESSAGE_BYTES = 1 << 20


# --- the test's side ------------------------------------------------------------------


@dataclass
class ForkedProcess:
    """A child of the fork server, driven like the ``subprocess.Popen`` it replaces."""

    pid: int
    args: list[str]
    _status: socket.socket
    returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self._read_status(timeout=0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None and not self._read_status(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:  # as Popen: never signal a pid that may have been reused
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def _read_status(self, timeout: float | None) -> bool:
        self._status.settimeout(timeout)
        try:
            message = self._status.recv(_MESSAGE_BYTES)
        except (TimeoutError, BlockingIOError):
            return False
        self._status.close()
        # an empty message: the fork server died before its child; say so as a crash would
        self.returncode = int(json.loads(message)["returncode"]) if message else -signal.SIGKILL
        return True


@dataclass
class ForkServer:
    """The process that forks; one per test process, started on first use."""

    proc: subprocess.Popen[bytes]
    path: Path
    env: dict[str, str]

    @classmethod
    def start(cls) -> ForkServer:
        directory = Path(tempfile.mkdtemp(prefix="eve-fork-"))
        path = directory / "socket"
        env = dict(os.environ)
        proc = subprocess.Popen(
            [sys.executable, __file__, str(path)],
            env=env,
            stdin=subprocess.PIPE,  # its end of file tells the fork server this process left
            stdout=subprocess.PIPE,
        )
        assert proc.stdout is not None
        ready = proc.stdout.readline()
        if ready != b"ready\n":
            proc.kill()
            raise RuntimeError(f"the fork server did not start: {ready!r}")
        return cls(proc=proc, path=path, env=env)

    def accepts(self, env: dict[str, str]) -> bool:
        def fixed(source: dict[str, str]) -> dict[str, str]:
            return {k: v for k, v in source.items() if k.startswith(_FIXED_AT_START)}

        return self.proc.poll() is None and fixed(env) == fixed(self.env)

    def spawn(
        self, args: list[str], *, cwd: Path, env: dict[str, str], streams: tuple[int, int, int]
    ) -> ForkedProcess:
        request = json.dumps({"args": args, "cwd": str(cwd), "env": env}).encode()
        status = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        status.connect(str(self.path))
        socket.send_fds(status, [request], list(streams))
        pid = int(json.loads(status.recv(_MESSAGE_BYTES))["pid"])
        return ForkedProcess(pid=pid, args=[sys.executable, "-m", "eve", *args], _status=status)

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        with contextlib.suppress(OSError):
            self.path.unlink()
            self.path.parent.rmdir()


_server: ForkServer | None = None
_server_pid = 0
_server_lock = threading.Lock()


def _fork_server() -> ForkServer | None:
    global _server, _server_pid
    if os.environ.get(ENABLED_ENV, "1") == "0":
        return None
    with _server_lock:
        if _server is None or _server_pid != os.getpid():
            _server, _server_pid = ForkServer.start(), os.getpid()
            import atexit

            atexit.register(_server.stop)
        return _server


def _fd(stream: IO[Any] | int | None, default: int) -> int:
    if stream is None:
        return default
    return stream if isinstance(stream, int) else stream.fileno()


def popen(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    stdout: IO[Any] | int | None = None,
    stderr: IO[Any] | int | None = None,
) -> subprocess.Popen[str] | ForkedProcess:
    """``subprocess.Popen(argv, …, text=True)``, forked when ``argv`` is ``python -m eve …``.

    The fork's standard input is ``/dev/null``; ``stdout`` and ``stderr`` are files or
    descriptors (``subprocess.STDOUT`` for ``stderr``)."""
    server = _fork_server() if argv[:3] == [sys.executable, "-m", "eve"] else None
    if server is None or not server.accepts(env):
        return subprocess.Popen(argv, cwd=cwd, env=env, stdout=stdout, stderr=stderr, text=True)
    with open(os.devnull, "rb") as null:
        out = _fd(stdout, 1)
        err = out if stderr == subprocess.STDOUT else _fd(stderr, 2)
        return server.spawn(argv[3:], cwd=cwd, env=env, streams=(null.fileno(), out, err))


# --- the fork server's side -------------------------------------------------------------


@dataclass
class _Request:
    args: list[str]
    cwd: str
    env: dict[str, str]


def _serve(path: str) -> _Request:
    """Fork a child per request until the test's process leaves; in a child, return what
    it was asked to run (the parent never returns: it exits when the test's process does)."""
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    # a fork copies only the thread that forks: nothing may run beside it
    assert threading.active_count() == 1, threading.enumerate()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(64)
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
                _report_exits(children)
                continue
            connection, _ = listener.accept()
            message, fds, _, _ = socket.recv_fds(connection, _MESSAGE_BYTES, 3)
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
        _report_exits(children)  # a child may end between a select and its signal


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


def _become(request: _Request) -> None:
    """In the child: the process ``python -m eve *args`` would start, then run it."""
    import runpy

    os.chdir(request.cwd)
    os.environ.clear()
    os.environ.update(request.env)
    sys.path.insert(0, request.cwd)  # as ``-m`` puts the working directory first
    sys.argv = ["-m", *request.args]  # runpy sets argv[0] to the module's file, as -m does
    # the streams were made for the fork server's pipes; a terminal is line-buffered
    sys.stdout.reconfigure(line_buffering=sys.stdout.isatty())
    runpy.run_module("eve", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    # this file's directory (tests/) must not shadow anything eve imports
    del sys.path[0]
    _become(_serve(sys.argv[1]))
