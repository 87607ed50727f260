"""Loopback is not trust, in a real browser (headless chromium): a page of another origin
posts to a loopback ``eve serve`` (no-cors fetches, a CORS fetch, a form) and a page whose
name resolves to the server (DNS rebinding, played by ``*.localhost``, which chromium
resolves to loopback itself) calls it as its own origin; neither reads nor changes anything.
And ``eve dev --web`` opened with its ``#token=`` URL works, while without it the page gets
nothing."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from tests.ui.conftest import REQUIRE_ENV

if os.environ.get(REQUIRE_ENV) != "1":  # required: a missing selenium fails the import
    pytest.importorskip("selenium", reason="the selenium package is not installed")

from selenium.webdriver.common.by import By

from tests.conftest import AppFactory
from tests.server.dev_web import dev_web
from tests.sessions.harness import Server
from tests.ui.test_dev_ui import css, leave, wait_for

#: the attacker's page: it tries what a page may send to another origin without asking. The
#: form's text/plain body is ``{"message": "pwned by a form="}``: valid JSON for the API
ATTACK = """<!doctype html><title>attack</title>
<iframe name="sink"></iframe>
<form id="form" method="POST" enctype="text/plain" target="sink" action="EVE/eve/v1/session">
<input name='{"message": "pwned by a form' value='"}'></form>
<script>
const eve = "EVE/eve/v1/";
async function attempt(run) {
  try {
    const response = await run();
    return response.type === "opaque" ? "opaque" : `read ${response.status}`;
  } catch (error) {
    return `failed: ${error.name}`;
  }
}
(async () => {
  const post = (mode, type, body) =>
    fetch(eve + "session", { method: "POST", mode, headers: { "content-type": type }, body });
  window.results = {
    noCorsText: await attempt(() => post("no-cors", "text/plain", '{"message": "pwned"}')),
    noCorsForm: await attempt(() =>
      post("no-cors", "application/x-www-form-urlencoded", "message=pwned")),
    corsJson: await attempt(() => post("cors", "application/json", '{"message": "pwned"}')),
    read: await attempt(() => fetch(eve + "sessions")),
  };
})();
</script>"""

#: run in a page of the rebound origin: its same-origin calls to the API, as status and code
SAME_ORIGIN_CALLS = """
const done = arguments[arguments.length - 1];
const answer = async (response) => `${response.status} ${(await response.json()).code}`;
(async () => [
  await answer(await fetch("/eve/v1/sessions")),
  await answer(await fetch("/eve/v1/session", {
    method: "POST", headers: { "content-type": "application/json" }, body: '{"message": "pwned"}',
  })),
])().then(done, (error) => done(String(error)));
"""


class _Attacker(BaseHTTPRequestHandler):
    page = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.end_headers()
        self.wfile.write(self.page)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the test's output is not the attacker's access log


@pytest.fixture
def target(make_app: AppFactory, browser: Any) -> Iterator[Server]:
    """``eve serve`` on loopback, no token, answering the name ``agent.localhost`` too."""
    server = Server(make_app(), args=["--allowed-host", "agent.localhost"]).start()
    try:
        yield server
    finally:
        leave(browser)
        server.stop()


@pytest.fixture
def attacker(target: Server) -> Iterator[str]:
    """The attacker's page, served from another origin (127.0.0.2, another port)."""
    handler = type(
        "Attacker", (_Attacker,), {"page": ATTACK.replace("EVE", _root(target)).encode()}
    )
    httpd = ThreadingHTTPServer(("127.0.0.2", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.2:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _root(server: Server) -> str:
    return f"http://127.0.0.1:{server.port}"


def _page_json(browser: Any) -> dict[str, Any] | None:
    """The JSON answer the page shows, or None while it shows something else."""
    text = browser.find_element(By.TAG_NAME, "body").text
    try:
        answer: dict[str, Any] = json.loads(text)
    except json.JSONDecodeError:
        return None
    return answer


def test_a_page_of_another_origin_reads_nothing_and_creates_nothing(
    browser: Any, target: Server, attacker: str
) -> None:
    browser.get(attacker)
    results = wait_for(browser, lambda d: d.execute_script("return window.results"))
    # the no-cors posts were sent (their answers are opaque); the others never got an answer
    assert results == {
        "noCorsText": "opaque",
        "noCorsForm": "opaque",
        "corsJson": "failed: TypeError",  # the preflight is not approved
        "read": "failed: TypeError",  # no Access-Control-Allow-Origin
    }
    browser.execute_script("document.getElementById('form').submit()")
    browser.switch_to.frame("sink")
    try:
        refused = wait_for(browser, _page_json)
    finally:
        browser.switch_to.default_content()
    assert refused["code"] == "cross_origin_refused"
    assert "http://127.0.0.2" in refused["error"]
    assert target.get("/sessions").json()["sessions"] == []


def test_a_rebound_name_gets_nothing_and_an_allowed_one_gets_the_ui(
    browser: Any, target: Server
) -> None:
    browser.get(f"http://attacker.localhost:{target.port}/")
    assert wait_for(browser, _page_json)["code"] == "host_not_allowed"
    # script of the rebound origin: to the browser, the API is its own origin now
    calls = browser.execute_async_script(SAME_ORIGIN_CALLS)
    assert calls == ["400 host_not_allowed", "400 host_not_allowed"]
    assert target.get("/sessions").json()["sessions"] == []

    created = target.create()
    browser.get(f"http://agent.localhost:{target.port}/")
    wait_for(browser, lambda d: css(d, f"tr[data-session='{created}']"))
    listed = target.get("/sessions").json()["sessions"]
    assert [s["sessionId"] for s in listed] == [created]


def test_the_dev_ui_works_with_its_token_url_and_gets_nothing_without(
    browser: Any, make_app: AppFactory
) -> None:
    with dev_web(make_app(), {}, "--no-browser") as web:
        created = httpx.post(web.page + "eve/v1/session", json={}, headers=web.auth(), timeout=10)
        session = created.json()["sessionId"]
        try:
            browser.get(web.url)
            wait_for(browser, lambda d: css(d, f"tr[data-session='{session}']"))
            # the token left the address bar and history; the tab keeps it
            assert browser.execute_script("return location.href") == web.page
            kept = browser.execute_script("return sessionStorage.getItem('eve-api-token')")
            assert kept == web.token
            visited = browser.execute_script(
                "return performance.getEntriesByType('resource').map(e => e.name)"
            )
            assert visited and all(str(web.token) not in address for address in visited)

            # the same page without the token: every API call is refused, so it asks
            browser.execute_script("sessionStorage.clear()")
            browser.get(web.page)
            wait_for(browser, lambda d: d.find_element(By.CSS_SELECTOR, "dialog[open]"))
            assert css(browser, f"tr[data-session='{session}']") == []
        finally:
            leave(browser)
