"""The dev UI's OIDC sign-in in headless chromium against a real provider on loopback: the
authorization code + PKCE round trip, the token kept out of every URL, a forged state
refused, and a token about to expire dropped so the page asks again."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import jwt
import pytest

from tests.conftest import MINIMAL, write_files
from tests.oidc.provider import AUDIENCE, CLIENT_ID, Provider
from tests.sessions.harness import Server
from tests.ui.conftest import REQUIRE_ENV, screenshot

if os.environ.get(REQUIRE_ENV) != "1":  # required: a missing selenium fails the import
    pytest.importorskip("selenium", reason="the selenium package is not installed")

from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

RENDERED = "return performance.getEntriesByName('eve:sessions-rendered').length > 0"


@pytest.fixture(scope="module")
def provider(browser: Any) -> Iterator[Provider]:
    with Provider().serve() as served:
        yield served


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, provider: Provider) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("oidc")
    write_files(root, MINIMAL)
    env = {
        "EVE_AUTH_ISSUER": provider.issuer,
        "EVE_AUTH_AUDIENCE": AUDIENCE,
        "EVE_AUTH_CLIENT_ID": CLIENT_ID,
    }
    server = Server(root, args=["--model", "offline/test"], env=env).start()
    try:
        yield server
    finally:
        server.stop()


def wait(driver: Any, script: str, timeout: float = 20.0) -> Any:
    def attempt(d: Any) -> Any:
        try:
            return d.execute_script(script)
        except WebDriverException:
            return None  # mid-navigation

    return WebDriverWait(driver, timeout, poll_frequency=0.05).until(attempt)


def open_fresh(browser: Any, server: Server, path: str = "/") -> None:
    """The page at ``path``, in a tab that holds no token (the tests share the tab)."""
    root = server.url.removesuffix("/eve/v1")
    browser.get(root + "/ui/style.css")
    browser.execute_script("sessionStorage.clear()")
    browser.get(root + path)


def sign_in(browser: Any, server: Server) -> None:
    open_fresh(browser, server)
    wait(browser, "return !document.getElementById('oidc-login').hidden")
    browser.find_element(By.ID, "oidc-login").click()


def test_signing_in_through_the_issuer_lists_the_sessions_as_that_user(
    browser: Any, server: Server, provider: Provider
) -> None:
    try:
        sign_in(browser, server)
        wait(browser, RENDERED)
        screenshot(browser, "oidc-signed-in")
        token = browser.execute_script("return sessionStorage.getItem('eve-api-token')")
        visited = browser.execute_script(
            "return [location.href, ...performance.getEntriesByType('resource').map(e => e.name)]"
        )
        dialog_open = browser.execute_script("return document.getElementById('token-dialog').open")
    finally:
        browser.get("about:blank")
    claims = jwt.decode(token, options={"verify_signature": False})
    assert (claims["iss"], claims["sub"], claims["aud"]) == (provider.issuer, "alice", AUDIENCE)
    assert not dialog_open
    assert "code=" not in visited[0]  # the code left the address bar and the history
    assert all(token not in address for address in visited)


def test_an_answer_with_a_state_the_page_did_not_send_is_refused(
    browser: Any, server: Server
) -> None:
    try:
        open_fresh(browser, server, "/?code=stolen&state=forged")
        wait(browser, "return document.getElementById('token-dialog').open")
        error = browser.find_element(By.ID, "token-error").text
        token = browser.execute_script("return sessionStorage.getItem('eve-api-token')")
        address = browser.current_url
    finally:
        browser.get("about:blank")
    assert "not for this page" in error
    assert token is None and "code=" not in address


def test_a_token_about_to_expire_is_dropped_and_the_page_asks_again(
    browser: Any, server: Server, provider: Provider
) -> None:
    provider.token_seconds = 20  # inside the 30 seconds the page keeps in hand
    try:
        sign_in(browser, server)
        wait(browser, "return document.getElementById('token-dialog').open")
        token = browser.execute_script("return sessionStorage.getItem('eve-api-token')")
    finally:
        provider.token_seconds = 300
        browser.get("about:blank")
    assert token is None
