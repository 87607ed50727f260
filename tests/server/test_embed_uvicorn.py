"""eve mounted under ``/agent`` in a Starlette host served by a real uvicorn, in a process of
its own: the stream, auth and the host's routes under the prefix, and a session parked on an
approval that goes on after the host is killed and started again."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

import httpx

from eve.compiler import compile_to_disk
from tests.conftest import AppFactory
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import Event, Server, assert_dense, count

TOKEN = "embedded-test-token"

#: the host app a user would write, with eve's lifespan as its own
HOST = """
import sys

import uvicorn
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from eve.server import eve_app

agent = eve_app(sys.argv[1], token=sys.argv[3])


async def hello(request):
    return PlainTextResponse("the host's own route")


app = Starlette(
    routes=[Route("/hello", hello), Mount("/agent", app=agent)], lifespan=agent.lifespan
)
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
"""


@dataclass
class HostServer(Server):
    """The host app above, started in ``app_root`` (the ship tool writes there)."""

    @property
    def host(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return self.host + "/agent/eve/v1"

    def hello(self) -> str:
        """The host's own route, beside the mount."""
        response = httpx.get(self.host + "/hello", timeout=30)
        assert response.status_code == 200
        return response.text

    def command(self) -> list[str]:
        host = self.app_root / "host.py"
        host.write_text(HOST, encoding="utf-8")
        return [sys.executable, str(host), str(self.app_root), str(self.port), TOKEN]


def read_until(server: Server, session_id: str, start: int, last: str) -> list[Event]:
    """The followed NDJSON stream from ``start`` up to the first ``last`` event."""
    events: list[Event] = []
    with server.stream(f"/session/{session_id}/stream?startIndex={start}") as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"] == "application/x-ndjson"
        for line in response.iter_lines():
            if line.strip():
                events.append(json.loads(line))
                if events[-1]["type"] == last:
                    return events
    raise AssertionError(f"the stream ended before {last}: {[e['type'] for e in events]}")


def test_a_mounted_session_survives_a_killed_host(make_app: AppFactory) -> None:
    root = scripted_app(make_app, [call("ship", item="anvil"), say("shipped")], tools=("ship",))
    compile_to_disk(root)
    server = HostServer(root, token=TOKEN)
    server.start()
    try:
        assert server.hello() == "the host's own route"
        assert server.get("/health", headers={}).status_code == 200  # public, as in eve serve
        refused = server.get("/info", headers={})
        assert (refused.status_code, refused.json()["code"]) == (401, "unauthorized")
        assert refused.headers["www-authenticate"] == "Bearer"

        session = server.create("ship the anvil")
        before = read_until(server, session, 0, "input.requested")
        [requested] = [e["data"] for e in before if e["type"] == "input.requested"]
        [request] = requested["requests"]

        server.kill()  # SIGKILL: the turn is parked on the approval, nothing shuts down
        server.start()
        assert server.hello() == "the host's own route"

        server.answer(session, request["request_id"], "approve")
        after = read_until(server, session, len(before), "turn.completed")
    finally:
        log = server.stop()
    assert (root / "shipped.log").read_text() == "anvil\n", log
    events = before + after
    assert_dense(events)
    assert count("turn.started")(events) and not count("turn.started", 2)(events)
    [result] = [e["data"] for e in events if e["type"] == "action.result"]
    assert (result["status"], result["output"]) == ("completed", "shipped anvil")
    assert [e["data"]["message"] for e in events if e["type"] == "message.completed"] == ["shipped"]
