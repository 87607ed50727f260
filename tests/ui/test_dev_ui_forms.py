"""An MCP server's form in the dev UI (headless chromium, a real ``eve serve``): its fields
are inputs, and Accept sends their values."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ui.conftest import REQUIRE_ENV

if os.environ.get(REQUIRE_ENV) != "1":  # required: a missing selenium fails the import
    pytest.importorskip("selenium", reason="the selenium package is not installed")

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from tests.sessions.harness import Server, count
from tests.ui.conftest import screenshot
from tests.ui.test_dev_ui import answer, call_box, css, leave, output_of, root_url, stop, wait_for

SERVER = Path(__file__).parents[1] / "connections" / "asking_server.py"


@pytest.fixture
def hotel(tmp_path: Path, browser: Any) -> Iterator[Server]:
    root = tmp_path / "hotel"
    (root / "agent" / "connections").mkdir(parents=True)
    (root / "agent" / "agent.py").write_text(
        "from eve import define_agent\ndefault = define_agent(model='offline/script:script.json')\n"
    )
    (root / "agent" / "instructions.md").write_text("Follow the script.\n")
    (root / "agent" / "connections" / "hotel.py").write_text(
        "from eve.connections import define_mcp_connection\n"
        f"default = define_mcp_connection(description='Books.', "
        f"command={[sys.executable, str(SERVER)]!r}, expose='tools')\n"
    )
    script = [{"tool_calls": [{"name": "hotel__book", "input": {}}]}, {"text": "all set"}]
    (root / "script.json").write_text(json.dumps(script))
    server = Server(root).start()
    try:
        yield server
    finally:
        leave(browser)
        stop(server)


def test_a_servers_form_is_filled_in_and_accepted_from_the_page(
    browser: Any, hotel: Server
) -> None:
    session = hotel.create("book a room")
    hotel.wait_for(session, count("turn.waiting"))
    browser.get(root_url(hotel) + f"#/session/{session}")
    form = wait_for(browser, lambda d: next(iter(css(d, "fieldset.ask .form-fields")), None))
    assert (
        "hotel asks: Who is staying, and how long?" in css(browser, "fieldset.ask legend")[0].text
    )
    form.find_element(By.NAME, "name").send_keys("Ada")
    form.find_element(By.NAME, "nights").send_keys("2")
    Select(form.find_element(By.NAME, "room")).select_by_value("double")
    screenshot(browser, "mcp-form")
    answer(browser, "hotel__book", "accept")
    shown = wait_for(browser, lambda d: output_of(call_box(d, "hotel__book")))
    assert shown.text == "booked double for Ada, 2 nights"
