"""``python -m eve …`` for tests, forked from ``tests/forkserver.py`` instead of started anew.

``popen`` and ``run`` take what ``subprocess.Popen`` and ``subprocess.run`` take (the
arguments the tests use) and start ``python -m eve …`` (or a test's own ``python -c CODE …``
or ``python SCRIPT …``, which import eve: about a second of CPU started anew) as a fork of
the fork server, which has already imported eve, unless the environment asks for a fresh
interpreter (see ``ForkServer.accepts``) or ``EVE_TEST_FORK=0``; any other command (an
option to the interpreter, another program) runs as it did. What they
return is driven as a ``Popen`` is: ``pid``, ``poll``, ``wait``, ``communicate``, signals,
``returncode`` and the ``stdin``/``stdout``/``stderr`` pipes.
"""

from __future__ import annotations

import atexit
import io
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from tests.forkserver import SHARED_ENV, SOCKET_ENV, ForkServer, fixed_at_start, returncode

#: the program that asks the fork server for a ``python -m`` of another process's choosing
LAUNCHER = Path(__file__).with_name("fork_launch.py")

#: ``EVE_TEST_FORK=0`` starts every command as a fresh interpreter
ENABLED_ENV = "EVE_TEST_FORK"

Stream = IO[Any] | int | None


class ForkedProcess:
    """A child of the fork server, driven like the ``subprocess.Popen`` it stands for."""

    def __init__(
        self,
        args: list[str],
        pid: int,
        status: socket.socket,
        pipes: tuple[IO[Any] | None, IO[Any] | None, IO[Any] | None],
    ) -> None:
        self.args = args
        self.pid = pid
        self.stdin, self.stdout, self.stderr = pipes
        #: as Popen's (typeshed: ``int | MaybeNone``): None until the process has ended
        self.returncode: int | Any = None
        self._status = status

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

    def communicate(self, input: Any = None, timeout: float | None = None) -> tuple[Any, Any]:
        """As ``Popen.communicate``: send ``input``, read both pipes to their end, wait."""
        deadline = None if timeout is None else time.monotonic() + timeout
        read: dict[str, Any] = {}

        def drain(name: str, stream: IO[Any]) -> None:
            read[name] = stream.read()
            stream.close()

        readers = [
            threading.Thread(target=drain, args=(name, stream), daemon=True)
            for name, stream in (("out", self.stdout), ("err", self.stderr))
            if stream is not None
        ]
        for reader in readers:
            reader.start()
        if self.stdin is not None:
            try:
                if input:
                    self.stdin.write(input)
                self.stdin.close()
            except BrokenPipeError:
                pass  # as Popen: the process has stopped reading
        for reader in readers:
            reader.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if reader.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
        self.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return read.get("out"), read.get("err")

    def __enter__(self) -> ForkedProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        for stream in (self.stdout, self.stderr, self.stdin):
            if stream is not None:
                stream.close()
        self.wait()

    def _read_status(self, timeout: float | None) -> bool:
        self._status.settimeout(timeout)
        try:
            self.returncode = returncode(self._status)
        except (TimeoutError, BlockingIOError):
            return False
        return True


#: what ``popen`` returns
Command = subprocess.Popen[Any] | ForkedProcess

_server: ForkServer | None = None
_server_pid = 0
_server_lock = threading.Lock()
#: the one fork server of a pytest-xdist run (``start_shared``), read as the worker imports
#: this module, before a test can change the environment
_SHARED = os.environ.get(SHARED_ENV)


def _fork_server() -> ForkServer | None:
    global _server, _server_pid
    if os.environ.get(ENABLED_ENV, "1") == "0":
        return None
    with _server_lock:
        if _server is None or _server_pid != os.getpid():
            if _SHARED:
                shared = ForkServer.shared(_SHARED)
                # still starting (a worker's first test may come first): waited for here;
                # if it never is, it does not accept and commands start as they are
                shared.ready()
                _server, _server_pid = shared, os.getpid()
            else:
                _server, _server_pid = ForkServer.start(), os.getpid()
                atexit.register(_server.stop)
        return _server


def start_shared() -> ForkServer | None:
    """In pytest-xdist's controller, before it starts its workers: one fork server for them
    all, named in the environment they inherit (``SHARED_ENV``), in place of one each. Each
    is an interpreter that imported eve, 1.4 CPU-s to start; the controller stops it once
    the workers are done. Not waited for: it starts while the workers collect the tests.
    None when forking is off."""
    if os.environ.get(ENABLED_ENV, "1") == "0":
        return None
    server = ForkServer.start(wait=False)
    os.environ[SHARED_ENV] = server.share()
    return server


def module_command(module: str, env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that run ``python -m module`` forked, for another
    program to start (the MCP conformance suite starts its client once per scenario): a
    fresh interpreter's when the fork server is off or cannot honour ``env``.

    ``PYTHONPATH`` is honoured, its entries put on the child's ``sys.path``; the modules the
    fork server preloaded stay the ones it found."""
    environment = dict(env)
    server = _fork_server()
    probe = {k: v for k, v in environment.items() if k != "PYTHONPATH"}
    if server is not None and "PYTHONPATH" in server.env:
        probe["PYTHONPATH"] = server.env["PYTHONPATH"]
    if server is None or not server.accepts(probe):
        return [sys.executable, "-m", module], environment
    # -S: the launcher needs only the standard library, not site's start
    launch = [sys.executable, "-S", str(LAUNCHER), module]
    return launch, {**environment, SOCKET_ENV: str(server.path)}


def stdio_server_command(module: str, *, path: Path) -> tuple[list[str], dict[str, str]]:
    """``module_command`` for a server that eve starts over stdio (an agent's MCP connection
    declares its command and environment): the environment is all the server gets besides
    a few basics (the MCP SDK's), so it names ``path`` as ``PYTHONPATH`` and carries this
    process's variables that a fork cannot honour, as the fork server has them; a fork and
    a fresh interpreter then start alike."""
    return module_command(module, {**fixed_at_start(os.environ), "PYTHONPATH": str(path)})


def script_command() -> list[str] | None:
    """What eve runs for a stdio server declared as ``python SCRIPT …`` (in place of
    ``transports.stdio_python``) to fork it: the fork server's socket goes on the command
    line, as the MCP SDK gives the server an environment of the basics only. None when the
    fork server is off.

    The server is a child of the fork server, outside the process group eve made for it;
    the launcher in that group forwards SIGTERM to it, and the server ends at the end of its
    input when eve closes the connection."""
    server = _fork_server()
    if server is None:
        return None
    return [sys.executable, "-S", str(LAUNCHER), "--script", str(server.path)]


def _forkable(argv: list[str]) -> dict[str, object] | None:
    """What the fork server is asked to run for ``argv`` (``_Request``'s fields): ``python
    -m eve ARG…``, ``python -c CODE ARG…`` or ``python SCRIPT ARG…``; None for any other
    command (an option to the interpreter, another program)."""
    words = [str(a) for a in argv]
    if words[:1] != [sys.executable] or len(words) < 2:
        return None
    if words[1:3] == ["-m", "eve"]:
        return {"args": words[3:]}
    if words[1] == "-c" and len(words) > 2:
        return {"code": words[2], "args": words[3:]}
    if not words[1].startswith("-"):
        return {"script": words[1], "args": words[2:]}
    return None


def popen(
    argv: list[str],
    *,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: Stream = None,
    stdout: Stream = None,
    stderr: Stream = None,
    text: bool = False,
    bufsize: int = -1,
) -> Command:
    """``subprocess.Popen(argv, …)``, forked when ``argv`` is ``python -m eve …``, ``python
    -c CODE …`` or ``python SCRIPT …``."""
    environment = dict(os.environ if env is None else env)
    target = _forkable(argv)
    server = _fork_server() if target is not None else None
    if target is None or server is None or not server.accepts(environment):
        return subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            text=text,
            bufsize=bufsize,
        )
    ends = _Ends()
    try:
        child_in, parent_in = ends.make(stdin, 0, writes=False)
        child_out, parent_out = ends.make(stdout, 1, writes=True)
        if stderr == subprocess.STDOUT:
            child_err, parent_err = child_out, None
        else:
            child_err, parent_err = ends.make(stderr, 2, writes=True)
        pid, status = server.spawn(
            target,
            cwd=str(cwd if cwd is not None else Path.cwd()),
            env=environment,
            streams=(child_in, child_out, child_err),
        )
    except BaseException:
        ends.close(parents=True)
        raise
    ends.close(parents=False)
    pipes = (
        _file(parent_in, "w", text=text, bufsize=bufsize),
        _file(parent_out, "r", text=text, bufsize=bufsize),
        _file(parent_err, "r", text=text, bufsize=bufsize),
    )
    return ForkedProcess([str(a) for a in argv], pid, status, pipes)


def run(
    argv: list[str],
    *,
    input: Any = None,
    capture_output: bool = False,
    timeout: float | None = None,
    check: bool = False,
    **kwargs: Any,
) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run(argv, …)``, forked as ``popen`` forks."""
    if capture_output:
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    if input is not None:
        kwargs["stdin"] = subprocess.PIPE
    with popen(argv, **kwargs) as process:
        try:
            out, err = process.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
    assert process.returncode is not None
    done = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    if check:
        done.check_returncode()
    return done


class _Ends:
    """The descriptors ``popen`` opens: the child's are closed once it has them, the
    parent's become its pipes."""

    def __init__(self) -> None:
        self.child: list[int] = []
        self.parent: list[int] = []

    def make(self, stream: Stream, standard: int, *, writes: bool) -> tuple[int, int | None]:
        """(the child's descriptor, the parent's end of a pipe or None) for ``stream``."""
        if stream == subprocess.PIPE:
            read, write = os.pipe()
            child, parent = (write, read) if writes else (read, write)
            self.child.append(child)
            self.parent.append(parent)
            return child, parent
        if stream == subprocess.DEVNULL:
            null = os.open(os.devnull, os.O_RDWR)
            self.child.append(null)
            return null, None
        if stream is None:  # inherited, as Popen does, where there is one to inherit
            try:
                os.fstat(standard)
            except OSError:
                return self.make(subprocess.DEVNULL, standard, writes=writes)
            return standard, None
        return (stream if isinstance(stream, int) else stream.fileno()), None

    def close(self, *, parents: bool) -> None:
        for fd in self.child + (self.parent if parents else []):
            os.close(fd)


def _file(fd: int | None, mode: str, *, text: bool, bufsize: int) -> IO[Any] | None:
    """The parent's end of a pipe as ``Popen`` wraps it."""
    if fd is None:
        return None
    binary = open(fd, mode + "b", -1 if bufsize == 1 else bufsize)  # noqa: SIM115
    if not text:
        return binary
    if mode == "w":
        return io.TextIOWrapper(binary, write_through=True, line_buffering=bufsize == 1)
    return io.TextIOWrapper(binary)
