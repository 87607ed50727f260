"""Real MCP servers for the tests: the SDK's server API in a process of its own."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from eve.authoring.connections import MCPConnection
from eve.compiler.connections import connection_entry
from eve.connections import define_mcp_connection
from eve.manifest import ConnectionEntry
from tests import forked
from tests.ports import free_port

SERVER = Path(__file__).with_name("mcp_test_server.py")
#: a stdio server's command, as an agent's connection would give it: a fresh interpreter,
#: the process the client starts, found by its process group or its command line
STDIO_COMMAND = [sys.executable, str(SERVER)]
#: the repository's root, on a forked server's path: it runs as ``tests.connections.…``
REPO = Path(__file__).parents[2]


def forked_command(*args: str) -> tuple[list[str], dict[str, str]]:
    """The test server's command and environment (``args`` after the module's name), the
    server forked from the test process's fork server (``forked.stdio_server_command``):
    started anew, its imports (the MCP SDK) are most of a second of CPU a start.

    The process started (``tests/fork_launch.py``) is not the server: the server is a child
    of the fork server, outside the started process's group, and its command line is the
    fork server's (it carries none of ``args``); a test that finds the server by its group
    or its command line, or kills it and waits for its group to end, uses ``STDIO_COMMAND``."""
    command, env = forked.stdio_server_command("tests.connections.mcp_test_server", path=REPO)
    return [*command, *args], env


def forked_stdio() -> ConnectionEntry:
    """The entry of a connection ``calc`` to the test server over stdio, forked
    (``forked_command``)."""
    command, env = forked_command()
    return entry(define_mcp_connection(description="Test tools.", command=command, env=env))


def forked_stdio_source() -> str:
    """``command=…, env=…`` for an agent's ``define_mcp_connection`` (``forked_command``)."""
    command, env = forked_command()
    return f"command={command!r}, env={env!r}"


def entry(definition: MCPConnection, name: str = "calc") -> ConnectionEntry:
    return connection_entry(
        definition,
        name=name,
        logical_path=f"agent/connections/{name}.py",
        source_id=f"connections/{name}.py",
        export_name="default",
        factory=False,
    )


@contextlib.contextmanager
def http_server(port: int | None = None, *flags: str) -> Iterator[str]:
    """A Streamable HTTP server on loopback (on ``port``, or a free one); its URL while the
    block runs. ``flags`` go to the server (``without-add``)."""
    port = port or free_port()
    # forked (``forked_command``): a test sees the server by its port, and ends it with
    # SIGTERM, which the started process passes on
    command, env = forked_command("http", str(port), *flags)
    process = subprocess.Popen(
        command,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    with serving(process, port):
        yield f"http://127.0.0.1:{port}/mcp"


@contextlib.contextmanager
def serving(process: subprocess.Popen[bytes], port: int) -> Iterator[None]:
    """Once ``process`` listens on ``port``, until the block ends (then it is ended)."""
    try:
        deadline = time.monotonic() + 20
        while True:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert process.poll() is None, "the HTTP MCP server exited at start"
            assert time.monotonic() < deadline, "the HTTP MCP server did not listen in 20 s"
            time.sleep(0.05)
        yield
    finally:
        process.terminate()
        process.wait(10)


def alive(pid: int) -> bool:
    """Whether the process group ``pid`` (a stdio server leads its own) has any process."""
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def servers_tagged(marker: str) -> list[int]:
    """Pids of live processes whose command line carries ``marker``."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:  # the process ended while we looked
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(proc.name))
    return found


def wait_until_gone(marker: str, timeout: float = 10.0) -> list[int]:
    """The processes tagged ``marker`` still alive after ``timeout`` (none, once they end)."""
    deadline = time.monotonic() + timeout
    while (left := servers_tagged(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left
