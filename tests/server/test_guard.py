"""The request guard of the real app, in process: a rebinding ``Host`` gets nothing from any
route family, a page of another origin and a form post change nothing, and programs and the
server's own pages still work."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.requests import Request

from eve.errors import HostNotAllowed
from eve.server.guard import refused_request
from eve.server.hosts import LOOPBACK, allowed_hosts
from tests.conftest import AppFactory
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import Event, count, types
from tests.sessions.inprocess import InProcessServer

JSON = {"content-type": "application/json"}
#: what a page on attacker.example sends once its name points at 127.0.0.1 (DNS rebinding)
REBOUND = {"host": "attacker.example:80"}


@dataclass
class Parked:
    """A session parked on a person's approval of ``ship``: an answer would run the tool."""

    server: InProcessServer
    root: Path
    session: str
    request_id: str

    def approve_body(self) -> dict[str, Any]:
        return {"inputResponses": [{"requestId": self.request_id, "optionId": "approve"}]}

    def events(self) -> list[Event]:
        return self.server.events(self.session)


@pytest.fixture
def parked(make_app: AppFactory) -> Iterator[Parked]:
    root = scripted_app(make_app, [call("ship", item="anvil"), say("done")], tools=("ship",))
    server = InProcessServer(root).start()
    try:
        session = server.create("ship the anvil")
        events = server.wait_for(session, count("turn.waiting"))
        [requested] = [e for e in events if e["type"] == "input.requested"]
        yield Parked(server, root, session, requested["data"]["requests"][0]["request_id"])
    finally:
        server.stop()


def send(
    parked: Parked, method: str, path: str, body: Any = None, **headers: str
) -> httpx.Response:
    """``method`` on the app's ``path`` (not below ``/eve/v1``), with exactly ``headers``."""
    http = parked.server._client()
    content = None if body is None else httpx.Request("POST", "/", json=body).content
    return http.request(method, path, content=content, headers=headers)


def routes(parked: Parked) -> list[tuple[str, str, Any]]:
    """One request of each route family: what a page could read, and what it could change."""
    session = f"/eve/v1/session/{parked.session}"
    return [
        ("GET", "/eve/v1/sessions", None),
        ("GET", "/eve/v1/info", None),
        ("GET", session, None),
        ("GET", session + "/stream?follow=false", None),
        ("GET", "/", None),
        ("GET", "/ui/app.js", None),
        ("POST", "/eve/v1/session", {"message": "pwned"}),
        ("POST", session, {"message": "pwned"}),
        ("POST", session, parked.approve_body()),
        ("POST", session + "/cancel", None),
        ("POST", session + "/reset", None),
        ("POST", session + "/compact", None),
        ("POST", session + "/tasks/t/events", {"name": "go"}),
    ]


def assert_unchanged(parked: Parked, before: list[Event]) -> None:
    """One session, still parked on its approval; the tool never ran."""
    listed = parked.server.get("/sessions").json()["sessions"]
    assert [s["sessionId"] for s in listed] == [parked.session]
    assert types(parked.events()) == types(before)
    assert not (parked.root / "shipped.log").exists()


def test_a_rebinding_host_gets_nothing_from_any_route(parked: Parked) -> None:
    before = parked.events()
    for method, path, body in routes(parked):
        for host in ("attacker.example:80", "attacker.example", "127.0.0.1.attacker.example"):
            response = send(parked, method, path, body, host=host, **JSON)
            assert response.status_code == 400, (method, path, response.text)
            assert response.json()["code"] == "host_not_allowed"
            assert response.json()["ok"] is False
    assert_unchanged(parked, before)
    # health answers any name: it tells nothing, and a load balancer asks by address
    assert send(parked, "GET", "/eve/v1/health", **REBOUND).json()["status"] == "ready"
    # the loopback names, with or without a port, are answered
    for host in ("127.0.0.1", "127.0.0.1:8123", "localhost:8000", "[::1]:8000"):
        assert send(parked, "GET", "/eve/v1/sessions", host=host).status_code == 200, host


def test_a_page_of_another_origin_and_a_form_post_change_nothing(parked: Parked) -> None:
    before = parked.events()
    session = f"/eve/v1/session/{parked.session}"
    foreign: list[dict[str, str]] = [
        {"origin": "http://attacker.example", **JSON},
        {"origin": "http://127.0.0.1:9999", **JSON},  # another server on the machine
        {"origin": "null", **JSON},  # a sandboxed frame or a file
        {"sec-fetch-site": "cross-site", **JSON},
        {"sec-fetch-site": "same-site", **JSON},
    ]
    simple = ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; b=x"]
    for method, path, body in routes(parked):
        if method != "POST":
            continue
        for headers in foreign:
            response = send(parked, method, path, body, **headers)
            assert response.status_code == 403, (path, headers, response.text)
            assert response.json()["code"] == "cross_origin_refused"
        for content_type in simple:
            response = send(parked, method, path, body or {}, **{"content-type": content_type})
            assert response.status_code == 415, (path, content_type, response.text)
            assert response.json()["code"] == "unsupported_content_type"
        undeclared = send(parked, method, path, body or {})
        assert undeclared.json()["code"] == "unsupported_content_type"
    assert_unchanged(parked, before)

    # the server's own page (same origin, as a browser marks it) is answered
    own = {"origin": "http://127.0.0.1", "sec-fetch-site": "same-origin"}
    json_utf8 = {"content-type": "application/json; charset=utf-8"}
    answered = send(parked, "POST", session, parked.approve_body(), **own, **json_utf8)
    assert answered.status_code == 202 and answered.json()["status"] == "resolved"
    parked.server.wait_for(parked.session, count("turn.completed"))
    assert (parked.root / "shipped.log").read_text() == "anvil\n"
    # a program sends no Origin; a bodiless POST declares nothing
    assert send(parked, "POST", "/eve/v1/session", {}, **JSON).status_code == 202
    assert send(parked, "POST", session + "/cancel").json()["status"] == "no_active_turn"


def _request(method: str, path: str = "/eve/v1/session", **headers: str) -> Request:
    # as an ASGI server hands them over: bytes, which Starlette reads as Latin-1
    raw = [(k.replace("_", "-").encode(), v.encode("latin-1")) for k, v in headers.items()]
    return Request({"type": "http", "method": method, "path": path, "headers": raw})


def test_listed_hosts_and_a_wildcard_bind() -> None:
    listed = allowed_hosts(bind="127.0.0.1", listed=("agent.example.com",), token=None)
    assert refused_request(_request("GET", host="agent.example.com"), listed) is None
    assert refused_request(_request("GET", host="agent.example.com"), LOOPBACK) is not None
    # a wildcard bind answers every name, but a state change only from its own origin
    anywhere = allowed_hosts(bind="0.0.0.0", listed=(), token="s" * 32)
    ok = _request("POST", host="10.0.0.5:8000", origin="http://10.0.0.5:8000", **JSON)
    assert refused_request(ok, anywhere) is None
    elsewhere = _request("POST", host="10.0.0.5:8000", origin="http://attacker.example:8000")
    refused = refused_request(elsewhere, anywhere)
    assert refused is not None and refused.code == "cross_origin_refused"
    # a request without a Host (HTTP/1.0) names no allowed host
    nameless = refused_request(_request("GET"), LOOPBACK)
    assert nameless is not None and "without a Host" in str(nameless)


def test_a_refusal_shows_the_header_cut_and_printable() -> None:
    refused = refused_request(_request("GET", host="é" * 300), LOOPBACK)
    assert isinstance(refused, HostNotAllowed)
    assert refused.host == "\\xe9" * 100
    assert str(refused).isascii()
    chunked = _request("POST", host="127.0.0.1", transfer_encoding="chunked")
    refused = refused_request(chunked, LOOPBACK)
    assert refused is not None and refused.code == "unsupported_content_type"
