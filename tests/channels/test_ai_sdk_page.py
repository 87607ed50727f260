"""The example useChat-style page (examples/ai-sdk-chat), bundled from the ``ai`` package
with esbuild and served by the channel, in real headless Chromium: a message answered, a
tool call approved with the page's button, and a turn stopped."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from eve.channels.declaration import ChannelDeclaration
from eve.errors import ServerConfigError
from tests.channels.ai_sdk.harness import (
    CHANNEL,
    JS,
    TOKEN,
    ChatServer,
    install_packages,
    make_root,
)
from tests.conftest import REPO_ROOT
from tests.ui import conftest as ui

EXAMPLE = REPO_ROOT / "examples" / "ai-sdk-chat"
#: the dev UI tests' headless Chromium (a fixture, found here by its name)
browser = ui.browser


def bundle(page: Path) -> None:
    """The example's ``npm run build``, with the test client's packages."""
    install_packages()
    shutil.copytree(EXAMPLE / "page", page)
    esbuild = JS / "node_modules" / ".bin" / "esbuild"
    flags = ["--bundle", "--format=esm", "--minify", "--log-level=warning"]
    subprocess.run(
        [str(esbuild), str(EXAMPLE / "chat.mjs"), *flags, f"--outfile={page / 'chat.js'}"],
        env={**os.environ, "NODE_PATH": str(JS / "node_modules")},
        check=True,
    )


def test_the_page_chats_and_approves(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    bundle(tmp_path / "page")
    channel = ChannelDeclaration(
        name="chat", kind="ai_sdk", path=CHANNEL.path, options={"page": str(tmp_path / "page")}
    )
    server = ChatServer(make_root(tmp_path / "app"), channels=[channel]).start()
    driver = browser
    wait = WebDriverWait(driver, 30, poll_frequency=0.05)

    def texts(selector: str = "li.assistant p.text") -> list[str]:
        # read in one script: the page renders the list again with every chunk
        found: list[str] = driver.execute_script(
            "return [...document.querySelectorAll(arguments[0])].map(e => e.textContent)",
            selector,
        )
        return found

    def send(text: str) -> None:
        driver.find_element(By.ID, "message").send_keys(text)
        driver.find_element(By.ID, "send").click()

    try:
        driver.get(f"{server.base}{CHANNEL.path}/page/#token={TOKEN}")
        send("hello browser")
        wait.until(lambda _: "you said: hello browser" in texts())
        send("ship anvil")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "button.approve"))
        driver.execute_script("document.querySelector('button.approve').click()")
        wait.until(lambda _: "done: shipped anvil" in texts())
        assert texts("#error") == [""]
        assert texts("div.tool.output-available pre.output") == ["shipped anvil"]
        send("wait")  # Stop cancels the turn: its stream ends with abort, the chat is ready
        wait.until(lambda _: "wait: input-available" in texts("div.tool"))
        driver.find_element(By.ID, "stop").click()
        wait.until(
            lambda _: (
                texts("#status") == ["ready"] and "wait: input-available" not in texts("div.tool")
            )
        )
    finally:
        server.stop()


def test_a_page_without_index_html_is_refused(tmp_path: Path) -> None:
    channel = ChannelDeclaration(name="chat", kind="ai_sdk", path="/c", options={"page": "ui"})
    with pytest.raises(ServerConfigError, match=r"page='ui' has no index.html"):
        ChatServer(make_root(tmp_path), channels=[channel]).start()
