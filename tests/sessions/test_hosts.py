"""Several hosts sharing one PostgreSQL: ``eve serve`` processes in network namespaces.

Each server runs in a network namespace of its own (``tests/netns.py``), bound to that
namespace's address, and reaches PostgreSQL over a bridge, as servers on separate machines
would. Requests go to either address: sessions and turns are shared, a stream served by one
host carries the events another host's worker writes, and the turn of a host killed with
SIGKILL is adopted and finished by the other. Skipped, saying why, where namespaces cannot
be made (not root, no ``ip``, no permission to create them).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import AppFactory
from tests.netns import Hosts, unavailable
from tests.postgres import PostgresServer, PostgresUnavailable, find_bindir, required
from tests.sessions.apps import say, scripted_app
from tests.sessions.harness import Event, Server, assert_dense, count, types
from tests.sessions.test_crash_recovery import assert_finished_once, crash_app
from tests.sessions.test_postgres import FAST_TIMEOUT, hold_turn, release_slow, servers

#: the hosts' addresses are namespaces on this machine, but not loopback, which is all the
#: suite's connection guard (tests/conftest.py) lets through unmarked
pytestmark = pytest.mark.allow_network

TOKEN = "hosts-test-token-0123456789abcdef"
#: host i listens on PORT + i: the addresses differ already, but ``servers`` keeps each
#: server's output by its port
PORT = 8000


@dataclass
class HostServer(Server):
    """``eve serve`` in network namespace ``namespace``, bound to ``address``."""

    namespace: str = ""
    address: str = ""
    prefix: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://{self.address}:{self.port}/eve/v1"

    def command(self) -> list[str]:
        return [*self.prefix, *super().command(), "--host", self.address]


@pytest.fixture(scope="module")
def hosts() -> Iterator[Hosts]:
    why = unavailable()
    if why is not None:
        pytest.skip(f"no network namespaces here: {why}")
    made = Hosts.create(2)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture(scope="module")
def shared_postgres(hosts: Hosts) -> Iterator[PostgresServer]:
    """A PostgreSQL listening on the bridge too, where the namespaced hosts reach it."""
    bindir = find_bindir()
    if bindir is None:
        if required():
            pytest.fail("EVE_REQUIRE_POSTGRES=1 but no PostgreSQL server binaries", pytrace=False)
        pytest.skip("no PostgreSQL server binaries; run scripts/ensure-postgres")
    try:
        server = PostgresServer.start(bindir, also_listen=(hosts.gateway,))
    except PostgresUnavailable as error:
        pytest.fail(f"could not start PostgreSQL from {bindir}: {error}", pytrace=False)
    try:
        yield server
    finally:
        server.stop()


def two_hosts(root: Path, hosts: Hosts, pg: PostgresServer, **env: str) -> list[HostServer]:
    name = pg.database("hosts").rsplit("/", 1)[-1]
    url = pg.url_of(name, host=hosts.gateway)  # over the bridge, not loopback
    return [
        HostServer(
            root,
            port=PORT + i,
            token=TOKEN,
            env={
                "EVE_DATABASE_URL": url,
                "EVE_WORKER_ID": f"host{i}",
                "EVE_API_TOKEN": TOKEN,
                **env,
            },
            namespace=hosts.namespace(i),
            address=hosts.address(i),
            prefix=hosts.exec_prefix(i),
        )
        for i in range(2)
    ]


def follow_until_waiting(server: Server, session: str, seen: list[Event]) -> threading.Thread:
    """Follow ``session``'s stream on ``server`` in a thread until its first ``session.waiting``."""

    def follow() -> None:
        with server.stream(f"/session/{session}/stream?startIndex=0") as response:
            for line in response.iter_lines():
                if line.strip():
                    seen.append(json.loads(line))
                    if seen[-1]["type"] == "session.waiting":
                        return

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    return thread


def test_hosts_in_namespaces_share_sessions_and_streams(
    make_app: AppFactory, hosts: Hosts, shared_postgres: PostgresServer
) -> None:
    root = scripted_app(make_app, [say("first answer"), say("second answer")])
    a, b = two_hosts(root, hosts, shared_postgres)
    with servers(a, b):
        assert a.url != b.url and "127.0.0.1" not in a.url + b.url
        session = a.create("one")
        followed: list[Event] = []
        follower = follow_until_waiting(b, session, followed)  # served by the other host
        follower.join(60)
        assert b.send(session, "two").status_code == 202
        events = a.wait_for(session, count("session.waiting", 2))

    assert types(followed)[-1] == "session.waiting" and followed == events[: len(followed)]
    assert_dense(events)
    completed = [e["data"]["message"] for e in events if e["type"] == "message.completed"]
    assert completed == ["first answer", "second answer"]


def test_a_killed_hosts_turn_is_adopted_by_the_other_host(
    make_app: AppFactory, hosts: Hosts, shared_postgres: PostgresServer
) -> None:
    root = crash_app(make_app)
    a, b = two_hosts(root, hosts, shared_postgres, EVE_WORKER_TIMEOUT=FAST_TIMEOUT)
    with servers(a, b) as logs:
        session, holder = hold_turn(a)
        assert a.proc is not None and b.proc is not None
        victim, survivor = (a, b) if holder == a.proc.pid else (b, a)
        followed: list[Event] = []
        # a follower on the survivor, open while the victim still writes the turn
        follower = follow_until_waiting(survivor, session, followed)
        victim.kill()
        release_slow(root)
        events = survivor.wait_for(session, count("session.waiting"), timeout=30)
        follower.join(30)
    log = logs[survivor.port]

    assert len(assert_finished_once(root, events, log)) == 2
    assert f"adopted 1 turn(s) of stopped worker {victim.env['EVE_WORKER_ID']}-0" in log, log
    assert followed == events
