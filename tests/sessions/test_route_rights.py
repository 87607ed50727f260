"""Every ``/eve/v1`` session route, as each caller, with real tokens: the session's owner
(a JWT of the loopback provider), another user (another JWT), the operator (the shared
token) and anonymous. The owner and the operator get through; to the other user the
session does not exist (each route answers what it answers for an unknown id: 404 for a
read, 409 ``session_not_active`` for an act); anonymous is refused (401)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest

from tests.oidc.provider import Provider
from tests.sessions.apps import say
from tests.sessions.harness import Driver
from tests.sessions.inprocess import InProcessServer
from tests.sessions.principals import ALICE, BOB, As, scripted_root, verifying

#: each route on a session, as a caller sends it: ``(driver, session id) -> response``
Call = Callable[[Driver, str], httpx.Response]
ROUTES: dict[str, Call] = {
    "send": lambda d, s: d.post(f"/session/{s}", {"message": "hello"}),
    "answer": lambda d, s: d.post(
        f"/session/{s}", {"inputResponses": [{"requestId": "inp_x", "optionId": "deny"}]}
    ),
    "summary": lambda d, s: d.get(f"/session/{s}"),
    "stream": lambda d, s: d.get(f"/session/{s}/stream?follow=false"),
    "task event": lambda d, s: d.post(f"/session/{s}/tasks/{s}:t/events", {"name": "x"}),
    "cancel": lambda d, s: d.post(f"/session/{s}/cancel"),
    "compact": lambda d, s: d.post(f"/session/{s}/compact"),
    "reset": lambda d, s: d.post(f"/session/{s}/reset"),
}
#: what the owner and the operator get past the ownership check to: the next check's answer
PAST_THE_CHECK = {
    "answer": (409, "input_request_not_pending"),
    "task event": (409, "task_not_waiting"),
}


class Anonymous(Driver):
    """The server's routes without credentials."""

    def __init__(self, server: InProcessServer) -> None:
        self.server, self.token = server, None

    @property
    def url(self) -> str:
        return self.server.url

    def request(self, method: str, path: str, **kwargs: object) -> httpx.Response:
        return self.server.request(method, path, headers={}, **kwargs)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, oidc_provider: Provider
) -> Iterator[InProcessServer]:
    root = scripted_root(tmp_path_factory, [say(f"reply {n}") for n in range(40)], {})
    running = verifying(root, oidc_provider).start()
    yield running
    running.stop()


def callers(server: InProcessServer, oidc_provider: Provider) -> dict[str, Driver]:
    return {
        "owner": As(server, oidc_provider, ALICE),
        "other": As(server, oidc_provider, BOB),
        "operator": server,
        "anonymous": Anonymous(server),
    }


def answers(driver: Driver, session: str) -> dict[str, tuple[int, str]]:
    """Each route on ``session`` as ``driver`` calls it, in order: its status and code."""
    sent = {name: route(driver, session) for name, route in ROUTES.items()}
    return {name: (r.status_code, _code(r)) for name, r in sent.items()}


def _code(response: httpx.Response) -> str:
    """A refusal's code; "" for an answer that is not one JSON document (a log's events)."""
    if not response.headers.get("content-type", "").startswith("application/json"):
        return ""
    code: str = response.json().get("code", "")
    return code


@pytest.mark.parametrize("caller", ["owner", "other", "operator", "anonymous"])
def test_every_session_route_as_each_caller(
    server: InProcessServer, oidc_provider: Provider, caller: str
) -> None:
    who = callers(server, oidc_provider)
    owner, driver = who["owner"], who[caller]
    session = owner.create()
    got = answers(driver, session)
    listed = driver.get("/sessions")
    match caller:
        case "owner" | "operator":
            for name, (status, code) in got.items():
                expected = PAST_THE_CHECK.get(name)
                assert (status, code) == expected if expected else status < 300, (name, code)
            assert session in listed.text
            assert driver.get(f"/session/{session}").json()["owner"]["id"] == ALICE.id
        case "other":
            assert got == answers(driver, "ses_unknown")
            assert got["summary"] == (404, "session_not_found")
            assert got["send"] == (409, "session_not_active")
            assert listed.status_code == 200 and session not in listed.text
        case "anonymous":
            assert set(got.values()) == {(401, "unauthorized")}
            assert listed.status_code == 401
            assert driver.post("/session", {}).status_code == 401
        case _:
            raise AssertionError(caller)
