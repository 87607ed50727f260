"""docs/http-api.md: "every JSON answer has `ok`": true of every route the app has, in
success and in refusal; the two answers that are not JSON (the stream's NDJSON, the dev
UI's files) are not, as the page says.

The table below names a request that succeeds and one that is refused for each route, and
the test fails when the app gains a route the table does not name.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from starlette.routing import Route

from eve.auth.principal import OPERATOR
from eve.connections import authorization
from eve.memory.access import Turn
from eve.sessions import SessionService
from tests.conftest import AppFactory
from tests.sessions.apps import call, say
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer
from tests.sessions.principals import on_service
from tests.sessions.test_tasks import DELIVERY, app

TOKEN = "t" * 32
MEMORY = """
    from eve.memory import define_memory
    default = define_memory(scope="agent")
"""


@dataclass(frozen=True)
class Case:
    """One request: ``path`` may name ``{session}``, ``{idle}`` (a session with no turn)
    and ``{task}``."""

    path: str
    body: Any = None
    headers: dict[str, str] | None = None

    def send(self, server: InProcessServer, method: str, **names: str) -> httpx.Response:
        kwargs: dict[str, Any] = {}
        if self.body is not None:
            kwargs["json"] = self.body
        if self.headers is not None:
            kwargs["headers"] = self.headers
        return server.request(method, self.path.format(**names), **kwargs)


S = "/session/{session}"
#: (method, route path) → (a request that succeeds, one that is refused), in the order sent:
#: the task's event before the session is cancelled, reset and compacted
ROUTES: dict[tuple[str, str], tuple[Case, Case | None]] = {
    # health answers any host and needs no token: nothing refuses it
    ("GET", "/health"): (Case("/health"), None),
    ("GET", "/info"): (Case("/info"), Case("/info", headers={})),
    # what the dev UI reads before it signs in: public, nothing refuses it
    ("GET", "/auth/config"): (Case("/auth/config", headers={}), None),
    ("POST", "/session"): (Case("/session", {}), Case("/session", {"nope": 1})),
    ("GET", "/sessions"): (Case("/sessions"), Case("/sessions?limit=0")),
    ("POST", "/session/{session_id}"): (Case(S, {"message": "and?"}), Case("/session/x", {})),
    ("GET", "/session/{session_id}"): (Case(S), Case("/session/ses_unknown")),
    ("GET", "/session/{session_id}/stream"): (
        Case(S + "/stream?follow=false"),
        Case(S + "/stream?startIndex=-1"),
    ),
    ("POST", "/session/{session_id}/tasks/{task_id}/events"): (
        Case(S + "/tasks/{task}/events", {"name": "delivered"}),
        Case(S + "/tasks/{task}/events", {"name": ""}),
    ),
    # a fork copies a session between its turns: an idle one's (the one under test has a
    # task waiting)
    ("POST", "/session/{session_id}/fork"): (
        Case("/session/{idle}/fork"),
        Case("/session/x/fork"),
    ),
    ("POST", "/session/{session_id}/cancel"): (Case(S + "/cancel"), Case("/session/x/cancel")),
    ("POST", "/session/{session_id}/reset"): (Case(S + "/reset"), Case("/session/x/reset")),
    ("POST", "/session/{session_id}/compact"): (
        Case(S + "/compact"),
        Case("/session/x/compact"),
    ),
    ("GET", "/schedules"): (Case("/schedules"), Case("/schedules", headers={})),
    ("POST", "/schedules/{name:path}/run"): (
        Case("/schedules/jobs/quiet/run"),
        Case("/schedules/nope/run"),
    ),
    ("POST", "/schedules/{name:path}/pause"): (
        Case("/schedules/jobs/quiet/pause"),
        Case("/schedules/nope/pause"),
    ),
    ("POST", "/schedules/{name:path}/resume"): (
        Case("/schedules/jobs/quiet/resume"),
        Case("/schedules/nope/resume"),
    ),
    # an MCP sign-in's callback: anonymous, answered for a state a sign-in waits for,
    # refused for one never issued
    ("GET", "/oauth/callback"): (
        Case("/oauth/callback?state=every-route&code=c", headers={}),
        Case("/oauth/callback?state=never-issued&code=c", headers={}),
    ),
    ("GET", "/memory"): (Case("/memory"), Case("/memory?limit=0")),
    ("DELETE", "/memory/{memory_id}"): (Case("/memory/{memory}"), Case("/memory/mem_none")),
    # an operator erases one slot at a time
    ("DELETE", "/memory"): (Case("/memory?slot=memory"), Case("/memory")),
}
#: a schedule for the schedule routes; its run sends nothing, so no turn takes the script's
#: answers from the session under test
QUIET = """
from eve.schedules import define_schedule

schedule = define_schedule(cron="0 0 1 1 *", run=lambda ctx: None)
"""
#: the dev UI's files, outside /eve/v1: HTML, CSS and JavaScript, and a plain-text 404
UI_ROUTES = {("GET", "/"), ("GET", "/ui/{name}")}


def routes_of(server: InProcessServer) -> set[tuple[str, str]]:
    assert server.http is not None
    found = set()
    for route in server.http.app.routes:  # type: ignore[attr-defined]
        assert isinstance(route, Route)
        for method in route.methods or ():
            if method != "HEAD":  # Starlette adds it to every GET; it has no body
                found.add((method, route.path.removeprefix("/eve/v1")))
    return found


def assert_has_ok(response: httpx.Response, where: str) -> None:
    assert response.headers["content-type"] == "application/json", (where, response.text)
    body = json.loads(response.text)
    assert isinstance(body, dict) and "ok" in body, (where, response.text)
    assert body["ok"] is (response.status_code < 400), (where, response.status_code, body)


def test_every_json_answer_of_every_route_has_ok(make_app: AppFactory) -> None:
    # a workflow tool that waits for an event: a task to send one to
    files = {
        "agent/tools/track.py": DELIVERY,
        "agent/schedules/jobs/quiet.py": QUIET,
        "agent/memory.py": MEMORY,
    }
    root = app(make_app, files, [call("track"), say("it arrived")])
    server = InProcessServer(root, env={"EVE_API_TOKEN": TOKEN}, token=TOKEN).start()
    # a sign-in waiting for the callback (of a loop of its own: only its answer matters)
    waiting = asyncio.new_event_loop()
    try:
        assert routes_of(server) == ROUTES.keys() | UI_ROUTES
        session = server.create("track my parcel")
        events = server.wait_for(session, count("task.started"))
        [task] = [e["data"] for e in events if e["type"] == "task.started"]
        authorization.expect("every-route", seconds=30, loop=waiting)
        names = {
            "session": session,
            "idle": server.create(),
            "task": task["task_id"],
            "memory": remembered(server),
        }
        for (method, path), (success, refused) in ROUTES.items():
            ok = success.send(server, method, **names)
            assert ok.status_code < 400, (method, path, ok.text)
            if path.endswith("/stream"):
                assert ok.headers["content-type"] == "application/x-ndjson"
            else:
                assert_has_ok(ok, f"{method} {path}")
            if refused is None:
                continue
            no = refused.send(server, method, **names)
            assert no.status_code >= 400, (method, path, no.text)
            assert_has_ok(no, f"{method} {path} refused")
        assert_ui_files_are_not_json(server)
    finally:
        server.stop()
        waiting.close()


def remembered(server: InProcessServer) -> str:
    """The id of an entry saved in the agent's memory slot (for the route that forgets one)."""

    async def save(service: SessionService) -> str:
        assert service.setup.memory is not None
        turn = Turn(session_id="ses_x", principal=OPERATOR)
        return (await service.setup.memory.save(None, "a fact", {}, turn)).id

    return on_service(server, save)


def assert_ui_files_are_not_json(server: InProcessServer) -> None:
    assert server.http is not None
    page = server.http.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    missing = server.http.get("/ui/nothing.js")
    assert missing.status_code == 404 and missing.headers["content-type"].startswith("text/plain")


def test_the_page_says_so() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs/http-api.md").read_text("utf-8")
    assert 'Every JSON answer, info\'s and every refusal included, has `"ok"`' in text
