"""The dev UI shows an MCP connection's sign-in link (``authorization.required``), and following
it in the browser signs in: the authorization server sends the browser back to ``eve
serve``'s callback, and the waiting turn goes on (real ``eve serve``, real chromium, the
authorization server of tests/connections/oauth_server.py)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.conftest import AppFactory
from tests.connections.oauth_apps import vault_app, vault_server
from tests.connections.oauth_server import protected_server
from tests.sessions.harness import count, types
from tests.ui.conftest import REQUIRE_ENV

if os.environ.get(REQUIRE_ENV) != "1":  # required: a missing selenium fails the import
    pytest.importorskip("selenium", reason="the selenium package is not installed")

from tests.ui.conftest import screenshot
from tests.ui.test_dev_ui import call_box, css, output_of, root_url, stop, wait_for


def test_the_page_shows_the_sign_in_link_and_following_it_goes_on(
    browser: Any, make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    with protected_server() as auth:
        server = vault_server(vault_app(make_app, auth, monkeypatch), auth)
        try:
            session = server.create("who am I?")
            browser.get(root_url(server) + f"#/session/{session}")
            link = wait_for(browser, lambda d: next(iter(css(d, "p.sign-in a")), None))
            assert link.get_attribute("href").startswith(auth.issuer + "/authorize?")
            assert link.get_attribute("rel") == "noopener noreferrer"
            screenshot(browser, "oauth-sign-in")
            page = browser.current_window_handle
            link.click()  # a new tab: the authorization server, then eve's callback
            events = server.wait_for(session, count("session.waiting"))
            for handle in browser.window_handles:
                if handle != page:
                    browser.switch_to.window(handle)
                    # with what the turn did and how often the person was sent to sign in:
                    # a refusal here once came with a turn that had gone on
                    shown = browser.page_source
                    assert '"signed_in"' in shown, (shown, types(events), auth.authorizations)
                    browser.close()
            browser.switch_to.window(page)
            output = wait_for(browser, lambda d: output_of(call_box(d, "vault__whoami")))
            assert output.text == "alice"
        finally:
            browser.get("about:blank")
            stop(server)
    assert auth.authorizations == 1
