"""Shared fixtures: build small apps on disk, keep authored modules from leaking between tests,
and keep every test off the network and away from real provider keys."""

from __future__ import annotations

import atexit
import gc
import ipaddress
import socket
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# The first DBOS of a process gives DBOS's logger a console handler on the sys.stderr of that
# moment (``dbos._logger.init_logger``). Done here, that is pytest's capture for the whole run;
# done inside a test that uses capfd, the handler kept that test's capture file, closed after
# it, and every later DBOS start in the worker failed flushing it ("I/O operation on closed
# file"). DBOS is pinned below 4, where the function lives.
from dbos._logger import init_logger

from tests.forkserver import quicker_sqlite_polls
from tests.rewrite_ahead import rewrite_ahead, should_rewrite_ahead
from tests.tmpfs import use_tmpfs

init_logger()

REPO_ROOT = Path(__file__).resolve().parent.parent
#: ``pytester`` runs this conftest on a test of its own to show the guard fires
pytest_plugins = ["pytester", "tests.slow_first"]

MINIMAL = {
    "agent/agent.py": """
        from eve import define_agent
        default = define_agent(model="offline/test")
    """,
    "agent/instructions.md": "Be helpful.\n",
}

AppFactory = Callable[..., Path]


def write_files(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


@pytest.fixture(scope="session")
def session_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new app's SQLite session files with eve's schema and DBOS's, made once per process
    (``tests/session_files.py``): what ``make_app`` copies into each app."""
    # imported here: pytest-xdist's controller, which runs no test, would pay for the
    # session modules' imports (0.35 s of CPU) at the top of this file
    from tests.session_files import make_session_files

    return make_session_files(tmp_path_factory.mktemp("session-files"))


@pytest.fixture
def make_app(tmp_path: Path, session_files: Path) -> AppFactory:
    """``make_app({"agent/tools/x.py": "..."}, minimal=True)`` → a fresh app root, holding
    the session files of an app started before (``tests/session_files.py``);
    ``new_database=True``: none, as a new app has before its first start."""
    from tests.session_files import copy_session_files  # as in session_files

    counter = iter(range(1000))

    def build(
        files: dict[str, str] | None = None, *, minimal: bool = True, new_database: bool = False
    ) -> Path:
        root = tmp_path / f"app{next(counter)}"
        root.mkdir()
        write_files(root, {**(MINIMAL if minimal else {}), **(files or {})})
        if not new_database:
            copy_session_files(session_files, root)
        return root

    return build


@pytest.fixture(scope="module")
def oidc_provider() -> Any:
    """One loopback OIDC provider for a module's shared server (``tests/oidc/provider.py``)."""
    from tests.oidc.provider import Provider  # only the modules that use it pay for its imports

    return Provider()


@pytest.fixture
def forked_stdio_scripts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stdio servers that eve starts in this process for an agent's ``python SCRIPT``
    (the example agent's units server) forked from the test process's fork server
    (``forked.script_command``): started anew, each imported the MCP SDK's server, about
    0.8 s of CPU a start."""
    # imported here: the modules that do not use it pay for neither import
    from eve.connections import transports
    from tests import forked

    def python() -> list[str]:  # at the first start, not before: a test may start none
        return forked.script_command() or [sys.executable]

    monkeypatch.setattr(transports, "stdio_python", python)


@pytest.fixture(autouse=True, scope="session")
def _quicker_sqlite_polls() -> None:
    """The DBOS a test launches in its own process polls as the forked ones do: a stop no
    longer waits out most of a second (``tests/forkserver.py``, ``SQLITE_POLL_SECONDS``)."""
    quicker_sqlite_polls()


@pytest.fixture(autouse=True)
def _isolate_authored_modules() -> Iterator[None]:
    path_before = list(sys.path)
    yield
    for name in [n for n in sys.modules if n == "agent" or n.startswith("agent.")]:
        del sys.modules[name]
    sys.path[:] = path_before


def wait_for_file(path: Path, *, timeout: float = 30.0) -> None:
    """Block until ``path`` exists (a subprocess reached a point), failing after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.05)


#: keys that would let a test reach a real provider (and bill it); removed for every test
PROVIDER_KEYS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "AZURE_OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
    "CO_API_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
)
#: ``@pytest.mark.allow_network``: the test may connect beyond this machine (none does now)
ALLOW_NETWORK = "allow_network"


class NetworkRefused(ConnectionRefusedError):
    """A test tried to reach another machine; tests/conftest.py refuses it."""


#: the youngest generation's threshold in a test process (Python's is 700): measured over
#: tests/execution, models and compiler in one process, the collector took 6.8 s of 24 s of
#: CPU, nearly all in full collections over what the suite imported; with what collection
#: imported frozen and this threshold it took 2.3 s
GC_YOUNG_THRESHOLD = 7_000


def pytest_configure(config: pytest.Config) -> None:
    # before pytest's tmp_path_factory finds its base and xdist starts its workers, which
    # inherit it: the tests' files on a tmpfs (tests/tmpfs.py)
    use_tmpfs()
    # a worker's interpreter ends with a garbage collection over all the suite imported,
    # seconds on a loaded machine at the very end of the run: freezing skips it (as the
    # eve command does, eve/cli/main.py)
    atexit.register(gc.freeze)
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
    config.addinivalue_line(
        "markers", f"{ALLOW_NETWORK}: let this test connect to non-loopback addresses"
    )


@pytest.hookimpl(tryfirst=True)  # before pytest's own, which collects garbage
def pytest_unconfigure(config: pytest.Config) -> None:
    # pytest's unraisable-exception plugin ends the run with a full collection, to warn of
    # what finalizers raise then: over all that a process imported after collection (the
    # SDKs and servers its tests loaded), 0.3 s of CPU after 400 tests, in each of the
    # workers at the very end of the run. Its warnings come after the summary (and no
    # warning is an error here), so nothing shows them: frozen, the heap is not walked
    gc.freeze()


@pytest.hookimpl(tryfirst=True)  # before xdist's controller starts its workers
def pytest_sessionstart(session: pytest.Session) -> None:
    # each worker would otherwise rewrite every test module's asserts itself when none is
    # cached yet (a fresh clone): tests/rewrite_ahead.py
    if should_rewrite_ahead(session.config):
        rewrite_ahead(session.config)
    if session.config.pluginmanager.has_plugin("dsession"):  # xdist's controller
        # imported here, as session_files: a run without workers imports it only if it forks
        from tests.forked import start_shared

        shared = start_shared()
        if shared is not None:
            session.config.add_cleanup(shared.stop)


def pytest_collection_finish(session: pytest.Session) -> None:
    # what collecting imported (eve, the SDKs, every test module) lives until the process
    # ends: frozen, the collector stops walking it at every full collection. Garbage made
    # by the tests themselves is collected as before.
    gc.freeze()


def _is_local(host: object) -> bool:
    """Loopback by address or name; ``""``, the wildcard addresses and this machine's own
    name (worker ids are made of it) also mean this host."""
    if not isinstance(host, str):
        return False
    if host in ("", "localhost", socket.gethostname()) or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def _refuse(host: object) -> NetworkRefused:
    return NetworkRefused(
        f"tests/conftest.py refuses a connection to {host!r}: tests stay on this machine "
        f"(mark the test @pytest.mark.{ALLOW_NETWORK} if it truly must leave it)"
    )


def _check(family: int, address: Any) -> None:
    # a Unix socket (a path) or a netlink one never leaves the machine
    if family in (socket.AF_INET, socket.AF_INET6) and not _is_local(address[0]):
        raise _refuse(address[0])


@pytest.fixture(autouse=True)
def _offline(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """No provider key in the environment (subprocesses inherit its absence) and no
    connection beyond loopback, unless the test is marked ``allow_network``."""
    for key in PROVIDER_KEYS:
        monkeypatch.delenv(key, raising=False)
    if request.node.get_closest_marker(ALLOW_NETWORK) is not None:
        return
    connect = socket.socket.connect
    connect_ex = socket.socket.connect_ex
    getaddrinfo = socket.getaddrinfo

    def guarded_connect(self: socket.socket, address: Any) -> None:
        _check(self.family, address)
        connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> int:
        _check(self.family, address)
        return connect_ex(self, address)

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        # a name lookup is itself a query to a resolver elsewhere
        name = host.decode() if isinstance(host, bytes) else host
        if name is not None and not _is_local(name):
            raise _refuse(name)
        return getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
