"""The dev UI in a real browser (headless chromium) against a real ``eve serve`` of the
example agent on a script model: the sessions list, the agent page, a turn with tool calls,
a subagent, an approval and a question answered from the page, a server restart mid-stream,
escaping, and the token prompt. Screenshots go to ``tests/ui/screenshots/``."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from bench.channel_probes.custom import SOURCE as INBOX
from tests.ui.conftest import REQUIRE_ENV

if os.environ.get(REQUIRE_ENV) != "1":  # required: a missing selenium fails the import
    pytest.importorskip("selenium", reason="the selenium package is not installed")

from selenium.common.exceptions import (
    StaleElementReferenceException,
    TimeoutException,
    WebDriverException,
)
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from bench.ui import WEIGHT_BUDGET_BYTES, first_render_ms, transferred_bytes, ui_weight
from tests.conftest import REPO_ROOT
from tests.sessions.harness import Server, count
from tests.ui.conftest import screenshot

XSS = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>'
ANSWER = "Ordered one hammer for 12.5 EUR; it arrives Friday morning."
#: every session replays it from the start (the script model counts a session's requests)
SCRIPT = {
    "__root__": [
        {
            "tool_calls": [
                {"name": "get_price", "input": {"item": "hammer"}},
                {"name": "get_price", "input": {"item": XSS}},
            ]
        },
        {"tool_calls": [{"name": "researcher", "input": {"message": "Hammer prices this year?"}}]},
        {"tool_calls": [{"name": "place_order", "input": {"item": "hammer", "quantity": 1}}]},
        {"tool_calls": [{"name": "confirm_delivery", "input": {"slot": "Friday morning"}}]},
        {"text": ANSWER},
    ],
    "researcher": [{"text": "Hammer prices rose 4% this year."}],
}


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[Server]:
    """``eve serve`` of a copy of the example agent on ``SCRIPT`` (after the browser: without
    one, nothing starts)."""
    root = tmp_path_factory.mktemp("ui") / "shop"
    shutil.copytree(REPO_ROOT / "agent", root / "agent")
    shutil.copytree(REPO_ROOT / ".eve", root / ".eve", ignore=shutil.ignore_patterns("sessions"))
    (root / "script.json").write_text(json.dumps(SCRIPT), encoding="utf-8")
    # a door of its own beside the session API, for the agent page (eve serve recompiles)
    (root / "agent/channels").mkdir(exist_ok=True)
    (root / "agent/channels/inbox.py").write_text(INBOX, encoding="utf-8")
    server = Server(root, args=["--model", "offline/script:script.json"]).start()
    try:
        yield server
    finally:
        leave(browser)
        stop(server)


def leave(browser: Any) -> None:
    """Close the page's streams before its server goes."""
    browser.get("about:blank")


def stop(server: Server) -> None:
    """SIGKILL: quicker than a stop, which gives a stream the page left (unnoticed until its
    next heartbeat) the server's grace period; these tests are not about shutdown."""
    if server.proc is not None and server.proc.poll() is None:
        server.kill()


def root_url(server: Server) -> str:
    return f"http://127.0.0.1:{server.port}/"


def wait_for(driver: Any, found: Callable[[Any], Any], timeout: float = 20.0) -> Any:
    """``found(driver)`` once it is truthy; elements replaced while looking are looked up again."""

    def attempt(d: Any) -> Any:
        try:
            return found(d)
        except (StaleElementReferenceException, WebDriverException):
            return None

    return WebDriverWait(driver, timeout, poll_frequency=0.05).until(attempt)


def css(driver: Any, selector: str) -> list[WebElement]:
    elements: list[WebElement] = driver.find_elements(By.CSS_SELECTOR, selector)
    return elements


def call_box(driver: Any, tool: str, containing: str = "") -> WebElement | None:
    """The first call of ``tool`` whose input contains ``containing``."""
    for box in css(driver, f"article.call[data-tool='{tool}']"):
        if containing in box.find_element(By.CSS_SELECTOR, "pre.input").text:
            return box
    return None


def output_of(box: WebElement | None) -> WebElement | None:
    if box is None:
        return None
    outputs = box.find_elements(By.CSS_SELECTOR, ":scope > div > pre.output")
    return outputs[0] if outputs else None


def answer(driver: Any, tool: str, option: str) -> None:
    button = wait_for(
        driver,
        lambda d: next(
            iter(css(d, f"article.call[data-tool='{tool}'] button[data-option='{option}']")), None
        ),
    )
    button.click()


def session_id_of(driver: Any) -> str:
    hash_: str = wait_for(driver, lambda d: d.execute_script("return location.hash"))
    assert hash_.startswith("#/session/ses_"), hash_
    return hash_.removeprefix("#/session/")


def log_indexes(driver: Any) -> list[int]:
    return [int(li.get_attribute("data-index")) for li in css(driver, "ol.events > li")]


def test_the_sessions_page_lists_new_sessions_without_a_reload(browser: Any, shop: Server) -> None:
    url = root_url(shop)
    rendered = first_render_ms(browser, url)
    print(f"\nfirst render of the sessions page: {rendered:.0f} ms")  # bench/ui.py records it
    created = shop.create()
    row = wait_for(browser, lambda d: css(d, f"tr[data-session='{created}']"))[0]
    assert "new" in row.text
    # who owns it: the shared token's holder
    assert row.find_element(By.CSS_SELECTOR, "td[data-label='Owner']").text == "operator"
    assert browser.execute_script("return location.href") == url
    # what the page loaded (the other pages' modules load when visited) is within the files
    assert 0 < transferred_bytes(browser) < sum(ui_weight().values()) <= WEIGHT_BUDGET_BYTES
    screenshot(browser, "sessions")
    # 640 px wide is 1280 at 200 % zoom: the page reflows instead of scrolling sideways
    browser.set_window_size(640, 900)
    try:
        overflow = browser.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
    finally:
        browser.set_window_size(1280, 900)
    assert overflow <= 0


def test_the_agent_page_shows_tools_with_schemas_subagents_skills_and_hooks(
    browser: Any, shop: Server
) -> None:
    browser.get(root_url(shop) + "#/agent")
    tool = wait_for(browser, lambda d: css(d, "li[data-tool='place_order']"))[0]
    assert "approval: always" in tool.text
    tool.find_element(By.TAG_NAME, "summary").click()
    assert '"item"' in tool.find_element(By.TAG_NAME, "pre").text
    page = browser.find_element(By.TAG_NAME, "main").text
    assert "Subagent researcher" in page and "Subagent triage" in page
    assert "returns-policy" in page and "turn_counter" in page
    # every channel of the example agent, and the one added for this test
    for name, kind in (("agents", "a2a"), ("chat", "ai_sdk"), ("inbox", "custom")):
        [channel] = css(browser, f"li[data-channel='{name}']")[:1]
        assert kind in channel.text, (name, channel.text)
    channels = browser.find_element(By.CSS_SELECTOR, "section[aria-label='Channels']").text
    assert "POST /channels/chat" in channels and "POST /channels/agents" in channels
    assert "GET /channels/inbox/{session_id}/log" in channels
    screenshot(browser, "agent")


def test_a_turn_shows_its_tools_subagent_approval_question_and_answer(
    browser: Any, shop: Server
) -> None:
    browser.get(root_url(shop))
    box = wait_for(browser, lambda d: d.find_element(By.ID, "first-message"))
    # keyboard only: type, Tab to the button, Enter
    box.send_keys("What does a hammer cost? Order one.")
    box.send_keys(Keys.TAB)
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    session = session_id_of(browser)

    price = wait_for(browser, lambda d: output_of(call_box(d, "get_price", "hammer")))
    assert '"price": 12.5' in price.text
    assert '"item": "hammer"' in call_box(browser, "get_price", "hammer").text  # type: ignore[union-attr]
    # the payload in a tool's output is shown as text: no element was made of it
    shown = wait_for(browser, lambda d: output_of(call_box(d, "get_price", "<script>")))
    assert "<script>window.__xss=2</script>" in shown.text
    assert shown.find_elements(By.XPATH, "./*") == []
    assert browser.execute_script("return window.__xss") is None
    assert css(browser, "main img") == []

    # the subagent's conversation is nested in the call that started it
    nested = wait_for(browser, lambda d: css(d, "article.call[data-tool='researcher'] .nested"))
    wait_for(browser, lambda d: "Hammer prices rose 4%" in nested[0].text)

    answer(browser, "place_order", "approve")
    # the answer names who gave it (input.resolved's responder)
    approval = "article.call[data-tool='place_order'] fieldset.ask.answered"
    wait_for(browser, lambda d: any("by operator" in f.text for f in css(d, approval)))
    assert "answered: approve by operator" in css(browser, approval)[0].text
    answer(browser, "confirm_delivery", "yes")
    final = wait_for(
        browser,
        lambda d: next((m for m in css(d, ".message.assistant") if ANSWER in m.text), None),
    )
    assert final.get_attribute("aria-live") == "polite"
    wait_for(browser, lambda d: "done · complete" in d.find_element(By.TAG_NAME, "main").text)
    assert "owner operator" in browser.find_element(By.CSS_SELECTOR, "p.summary").text
    screenshot(browser, "session")

    browser.find_element(By.XPATH, "//button[text()='Event log']").click()
    events = shop.events(session)
    wait_for(browser, lambda d: len(log_indexes(d)) >= len(events))
    assert log_indexes(browser) == list(range(len(log_indexes(browser))))
    screenshot(browser, "event-log")


def test_a_failed_calls_traceback_is_behind_a_toggle(browser: Any, shop: Server) -> None:
    session = shop.create("What does a hammer cost?")
    shop.wait_for(session, count("turn.waiting"))
    browser.get(root_url(shop) + f"#/session/{session}")
    box = wait_for(
        browser,
        lambda d: (
            output_of(call_box(d, "get_price", "<script>")) and call_box(d, "get_price", "<script>")
        ),
    )
    toggle = box.find_element(By.CSS_SELECTOR, "details.traceback")
    trace = toggle.find_element(By.TAG_NAME, "pre")
    assert toggle.get_attribute("open") is None and not trace.is_displayed()
    toggle.find_element(By.TAG_NAME, "summary").click()
    wait_for(browser, lambda d: trace.is_displayed())
    assert trace.text.startswith("Traceback (most recent call last):")
    assert "get_price.py" in trace.text and trace.text.endswith("is not in the catalog")
    assert trace.find_elements(By.XPATH, "./*") == []  # text, never markup
    assert browser.execute_script("return window.__xss") is None


def test_a_server_restart_mid_stream_leaves_no_gap_and_no_duplicate(
    browser: Any, shop: Server
) -> None:
    session = shop.create("Order a hammer.")
    shop.wait_for(session, count("turn.waiting"))
    browser.get(root_url(shop) + f"#/session/{session}")
    wait_for(browser, lambda d: css(d, "article.call[data-tool='place_order'] fieldset"))
    connection = browser.find_element(By.ID, "connection")
    assert connection.text == "live"

    shop.restart()  # SIGKILL, then a new process on the same port and database
    wait_for(browser, lambda d: connection.text == "live")
    answer(browser, "place_order", "approve")
    # the answer names who gave it (input.resolved's responder)
    approval = "article.call[data-tool='place_order'] fieldset.ask.answered"
    wait_for(browser, lambda d: any("by operator" in f.text for f in css(d, approval)))
    assert "answered: approve by operator" in css(browser, approval)[0].text
    answer(browser, "confirm_delivery", "yes")
    wait_for(browser, lambda d: any(ANSWER in m.text for m in css(d, ".message.assistant")))

    events = shop.wait_for(session, count("session.waiting"))
    wait_for(browser, lambda d: len(log_indexes(d)) == len(events))
    assert log_indexes(browser) == [event["meta"]["index"] for event in events]
    assert len(css(browser, ".conversation > .turn > .message.user")) == 1
    assert len(css(browser, "article.call[data-tool='place_order']")) == 1


def test_with_a_token_the_page_asks_for_it_and_keeps_it_out_of_urls(
    browser: Any, shop: Server
) -> None:
    token = "ui-test-token-0123456789abcdefghijklmnop"
    leave(browser)
    stop(shop)  # the same database, behind a token for this test
    guarded = Server(shop.app_root, args=shop.args, env={"EVE_API_TOKEN": token}, token=token)
    guarded.start()
    try:
        created = guarded.create()
        url = root_url(guarded)
        browser.get(url)
        dialog = wait_for(browser, lambda d: d.find_element(By.CSS_SELECTOR, "dialog[open]"))
        field = dialog.find_element(By.ID, "token-input")
        assert field.get_attribute("type") == "password"
        field.send_keys("wrong" + Keys.ENTER)
        error = wait_for(browser, lambda d: d.find_element(By.ID, "token-error"))
        wait_for(browser, lambda d: error.is_displayed() and "refused" in error.text)
        screenshot(browser, "token")
        field.send_keys(token + Keys.ENTER)
        try:
            wait_for(browser, lambda d: css(d, f"tr[data-session='{created}']"))
        except TimeoutException:
            page = browser.find_element(By.TAG_NAME, "body").text
            raise AssertionError(
                f"{created} not listed after the token; the page:\n{page}"
            ) from None
        visited = browser.execute_script(
            "return [location.href, ...performance.getEntriesByType('resource').map(e => e.name)]"
        )
    finally:
        leave(browser)
        stop(guarded)
        shop.start()  # as it was, for the module's other tests (xdist may run any after this)
    assert all(token not in address for address in visited)
    assert url in visited


def test_the_agent_page_lists_schedules_and_pauses_and_resumes_one(
    browser: Any, shop: Server
) -> None:
    browser.get(root_url(shop) + "#/agent")
    item = wait_for(browser, lambda d: css(d, "li[data-schedule='morning_digest']"))[0]
    assert "0 8 * * 1-5" in item.text and "Europe/Paris" in item.text
    assert "next " in item.text and "never ran" in item.text
    item.find_element(By.XPATH, ".//button[text()='Pause']").click()
    paused = wait_for(
        browser,
        lambda d: [e for e in css(d, "li[data-schedule='morning_digest']") if "paused" in e.text],
    )[0]
    paused.find_element(By.XPATH, ".//button[text()='Resume']").click()
    wait_for(
        browser,
        lambda d: [e for e in css(d, "li[data-schedule='morning_digest']") if "next " in e.text],
    )
    screenshot(browser, "schedules")
