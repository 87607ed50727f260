"""``eve dev --web``: the dev UI on loopback, its URL printed and opened with a token made
for the run, which every API route but health requires."""

from __future__ import annotations

import json
import shlex
import sys
import time

import httpx

from tests.conftest import AppFactory
from tests.server.dev_web import dev_web


def test_dev_web_prints_the_url_with_a_token_opens_it_and_serves_the_ui(
    make_app: AppFactory,
) -> None:
    root = make_app()
    opened = root / "opened.txt"
    # webbrowser runs $BROWSER with the URL for %s: a stand-in browser that notes it
    note = f"import sys; open({str(opened)!r}, 'w').write(sys.argv[1])"
    env = {"BROWSER": f"{shlex.quote(sys.executable)} -c {shlex.quote(note)} %s"}
    with dev_web(root, env) as web:
        page = httpx.get(web.page, timeout=10)
        without = httpx.get(web.page + "eve/v1/sessions", timeout=10)
        sessions = httpx.get(web.page + "eve/v1/sessions", headers=web.auth(), timeout=10)
        rebound = httpx.get(
            web.page + "eve/v1/sessions",
            headers={**web.auth(), "host": "attacker.example"},
            timeout=10,
        )
        deadline = time.monotonic() + 60
        while not opened.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    assert web.line.startswith("eve dev · offline/test · ")
    assert web.token is not None and len(web.token) >= 32
    assert page.status_code == 200 and '<script type="module" src="ui/app.js">' in page.text
    # a page on the machine without the token gets nothing, even on loopback
    assert without.status_code == 401 and without.json()["code"] == "unauthorized"
    assert sessions.json() == {"ok": True, "sessions": [], "nextCursor": None}
    assert rebound.status_code == 400 and rebound.json()["code"] == "host_not_allowed"
    assert opened.read_text() == web.url


def test_a_token_of_ones_own_is_used_and_not_printed_and_hosts_can_be_added(
    make_app: AppFactory,
) -> None:
    token = "my-own-dev-token-0123456789abcdefghijkl"
    auth = {"authorization": f"Bearer {token}"}
    args = ("--no-browser", "--allowed-host", "dev.localhost")
    with dev_web(make_app(), {"EVE_API_TOKEN": token}, *args) as web:
        sessions = web.page + "eve/v1/sessions"
        refused = httpx.get(sessions, timeout=10)
        answered = httpx.get(sessions, headers=auth, timeout=10)
        added = httpx.get(sessions, headers={**auth, "host": "dev.localhost:8000"}, timeout=10)
        other = httpx.get(sessions, headers={**auth, "host": "other.localhost"}, timeout=10)
    assert web.token is None and token not in web.line
    assert refused.status_code == 401 and answered.status_code == 200
    assert added.status_code == 200 and other.json()["code"] == "host_not_allowed"


def test_dev_web_mounts_the_agents_channels_as_eve_serve_does(make_app: AppFactory) -> None:
    chat = "from eve.channels import ai_sdk\ndefault = ai_sdk()\n"
    root = make_app({"agent/channels/chat.py": chat})
    body = {
        "id": "chat-1",
        "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}],
    }
    with dev_web(root, {}, "--no-browser") as web:
        assert web.process.stderr is not None
        announced = web.process.stderr.readline()
        refused = httpx.post(web.page + "channels/chat", json=body, timeout=10)
        answered = httpx.post(web.page + "channels/chat", json=body, headers=web.auth(), timeout=30)
    assert announced.strip() == f"eve dev · channel chat (ai_sdk) · {web.page}channels/chat"
    assert refused.status_code == 401
    assert answered.headers["x-vercel-ai-ui-message-stream"] == "v1"
    chunks = [json.loads(line[6:]) for line in answered.text.splitlines() if line[6:7] == "{"]
    # the turn ran through the channel on the offline model, to its end
    said = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
    assert said.startswith("(offline/test) You said: hi")
    assert chunks[-1] == {"type": "finish", "finishReason": "stop"}
