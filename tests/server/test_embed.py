"""eve.server.eve_app mounted in a Starlette host, in process: the lifespan composed into the
host's, auth and routes under the mount prefix, and the named errors of a wrong setup."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route
from starlette.testclient import TestClient
from starlette.types import Lifespan

from eve.compiler import compile_to_disk
from eve.errors import (
    ArtifactsMissing,
    DatabaseUnavailable,
    EveAppAlreadyRunning,
    EveAppNotStarted,
    ServerConfigError,
    StaleArtifacts,
)
from eve.runtime import load_compiled_agent
from eve.server import EveApp, eve_app
from tests.conftest import AppFactory
from tests.sessions.apps import say, scripted_app

TOKEN = "embedded-test-token"
AUTH = {"authorization": f"Bearer {TOKEN}"}
#: a loopback address: mounted, eve answers these (and the names it is given) only
LOCAL = "http://127.0.0.1"


async def hello(request: Request) -> PlainTextResponse:
    return PlainTextResponse("the host's own route")


def host_of(agent: EveApp, lifespan: Lifespan[Starlette] | None = None) -> Starlette:
    routes = [Route("/hello", hello), Mount("/agent", app=agent)]
    return Starlette(routes=routes, lifespan=lifespan)


@pytest.fixture
def app_root(make_app: AppFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = scripted_app(make_app, [say("hello from the mount")])
    compile_to_disk(root)
    monkeypatch.setenv("EVE_WORKER_ID", "embed-test")
    return root


def test_the_host_lifespan_runs_eve_and_its_routes_answer_under_the_prefix(
    app_root: Path,
) -> None:
    agent = eve_app(app_root, token=TOKEN, allowed_hosts=["agent.example.com"])
    seen: list[bool] = []

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with agent.lifespan():
            seen.append(agent.started)
            yield
        seen.append(agent.started)

    # the host app's public name, as listed in allowed_hosts
    with TestClient(
        host_of(agent, lifespan=lifespan), base_url="https://agent.example.com"
    ) as http:
        assert http.get("/hello").text == "the host's own route"
        # health is public under the prefix too; everything else needs the token
        assert http.get("/agent/eve/v1/health").json() == {"ok": True, "status": "ready"}
        refused = http.get("/agent/eve/v1/info")
        assert refused.status_code == 401 and refused.json()["code"] == "unauthorized"
        assert http.get("/agent/eve/v1/info", headers=AUTH).status_code == 200
        created = http.post("/agent/eve/v1/session", json={"message": "hi"}, headers=AUTH)
        assert created.status_code == 202, created.text
        session_id = created.json()["sessionId"]
        stream = f"/agent/eve/v1/session/{session_id}/stream"
        with http.stream("GET", stream, headers=AUTH) as response:
            assert response.headers["content-type"] == "application/x-ndjson"
            events = []
            for line in response.iter_lines():
                events.append(json.loads(line))
                if events[-1]["type"] == "turn.completed":
                    break
        texts = [e["data"]["message"] for e in events if e["type"] == "message.completed"]
        assert texts == ["hello from the mount"]
        # the dev UI is public below the mount too, and its page ends in "/" so that its
        # relative URLs (ui/app.js, eve/v1/...) stay below the mount point
        moved = http.get("/agent", follow_redirects=False)
        assert moved.status_code in (307, 308) and moved.headers["location"].endswith("/agent/")
        page = http.get("/agent/")
        assert page.status_code == 200 and "content-security-policy" in page.headers
        assert 'src="ui/app.js"' in page.text
        assert http.get("/agent/ui/app.js").status_code == 200
        # below the mount, a name not listed gets nothing and a page of another origin
        # changes nothing; health answers any name (a load balancer checks it by address)
        rebound = {**AUTH, "host": "attacker.example"}
        assert http.get("/agent/eve/v1/sessions", headers=rebound).status_code == 400
        assert http.get("/agent/", headers=rebound).json()["code"] == "host_not_allowed"
        assert http.get("/agent/eve/v1/health", headers=rebound).status_code == 200
        foreign = {**AUTH, "origin": "https://attacker.example"}
        posted = http.post("/agent/eve/v1/session", json={}, headers=foreign)
        assert posted.json()["code"] == "cross_origin_refused"
        own = {**AUTH, "origin": "https://agent.example.com"}
        assert http.post("/agent/eve/v1/session", json={}, headers=own).status_code == 202
        listed = http.get("/agent/eve/v1/sessions", headers=AUTH).json()["sessions"]
        assert len(listed) == 2  # the first one, and the one its own origin made
    assert seen == [True, False]  # started inside the host's lifespan, stopped with it


def test_a_request_before_the_lifespan_is_a_named_error(
    app_root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    agent = eve_app(app_root, token=TOKEN)
    http = TestClient(host_of(agent))  # never entered: no lifespan runs
    answer = http.get("/agent/eve/v1/health")
    assert answer.status_code == EveAppNotStarted.http_status == 500
    assert answer.json()["code"] == "eve_app_not_started"
    assert "/agent/eve/v1/health before its lifespan ran" in answer.json()["error"]
    assert "lifespan=agent.lifespan" in answer.json()["error"]
    assert "before its lifespan ran" in caplog.text  # the host's log says it too
    assert http.get("/hello").status_code == 200
    with pytest.raises(EveAppNotStarted), http.websocket_connect("/agent/eve/v1/anything"):
        pass  # a websocket has no status: the error is raised to the host


def test_a_second_eve_app_in_the_process_is_refused(app_root: Path, make_app: AppFactory) -> None:
    other_root = scripted_app(make_app, [say("second")])
    compile_to_disk(other_root)
    first = eve_app(app_root)
    second = eve_app(load_compiled_agent(other_root))  # a compiled agent works as a root does

    @contextlib.asynccontextmanager
    async def both(app: Starlette) -> AsyncIterator[None]:
        async with first.lifespan(), second.lifespan():
            yield

    host = Starlette(routes=[Mount("/one", app=first), Mount("/two", app=second)], lifespan=both)
    with pytest.raises(EveAppAlreadyRunning) as refused, TestClient(host):
        pass
    assert refused.value.running_app_root == str(app_root)
    assert refused.value.app_root == str(other_root)
    assert "one per process" in str(refused.value)
    assert not first.started  # the first one stopped as the host's startup failed
    # and released the process: the second one now starts, as the host's lifespan itself
    two = Starlette(routes=[Mount("/two", app=second)], lifespan=second.lifespan)
    with TestClient(two, base_url=LOCAL) as h:
        assert h.get("/two/eve/v1/health").status_code == 200

        async def enter_again() -> None:
            async with second.lifespan():
                pass

        assert h.portal is not None  # the loop the host's lifespan runs on
        with pytest.raises(EveAppAlreadyRunning, match="already runs: enter it once"):
            h.portal.call(enter_again)
        assert second.started  # the refused second entry stopped nothing


def test_served_directly_the_app_runs_its_own_lifespan(app_root: Path) -> None:
    with TestClient(eve_app(app_root), base_url=LOCAL) as http:
        assert http.get("/eve/v1/health").json()["status"] == "ready"
        # by default the loopback names only: eve does not know the host app's address
        assert http.get("/eve/v1/sessions").status_code == 200
        refused = http.get("/eve/v1/sessions", headers={"host": "agent.example.com"})
        assert refused.json()["code"] == "host_not_allowed"


def test_allowed_hosts_come_from_the_keyword_else_the_environment(
    app_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVE_ALLOWED_HOSTS", "a.example, b.example")
    from_env = eve_app(app_root).options.allowed_hosts
    assert {"a.example", "b.example", "127.0.0.1", "localhost", "::1"} == from_env.names
    given = eve_app(app_root, allowed_hosts="Agent.Example.com.").options.allowed_hosts
    assert given.names == {"agent.example.com", "127.0.0.1", "localhost", "::1"}
    assert not given.any_host
    assert eve_app(app_root, allowed_hosts=[]).options.allowed_hosts.names == {
        "127.0.0.1",
        "localhost",
        "::1",
    }
    with pytest.raises(ServerConfigError, match="32 characters or more"):
        eve_app(app_root, token="short", allowed_hosts=["*"])
    assert eve_app(app_root, token="t" * 32, allowed_hosts=["*"]).options.allowed_hosts.any_host
    with pytest.raises(ServerConfigError, match="without scheme, port or path"):
        eve_app(app_root, allowed_hosts=["https://agent.example.com"])


def test_stale_or_missing_artifacts_are_refused_when_the_app_is_built(
    make_app: AppFactory,
) -> None:
    root = scripted_app(make_app, [say("x")])
    with pytest.raises(ArtifactsMissing):
        eve_app(root)
    compile_to_disk(root)
    (root / "agent" / "instructions.md").write_text("Changed since the compile.\n")
    with pytest.raises(StaleArtifacts) as stale:
        eve_app(root)
    assert "agent/instructions.md" in str(stale.value)
    assert "run `eve compile`" in str(stale.value)


def test_the_database_url_option_is_used_and_never_shown(app_root: Path) -> None:
    agent = eve_app(app_root, database_url="mysql://eve:hunter2-secret@db.internal/eve")
    with pytest.raises(DatabaseUnavailable) as refused, TestClient(agent):
        pass
    assert "database_url must be a postgresql:// URL" in str(refused.value)
    assert "hunter2-secret" not in str(refused.value)
    assert not agent.started
