"""The browser for the dev UI tests: Debian's chromium through chromium-driver and selenium,
one per module. Without them the tests skip and say why (``scripts/ensure-chromium``
installs them), unless ``EVE_REQUIRE_BROWSER=1``, as under ``make test`` when it could
install them: then they fail."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.ui import browser_missing, open_browser

REQUIRE_ENV = "EVE_REQUIRE_BROWSER"
#: where the tests write a screenshot of each page (gitignored), for a person to look at
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    missing = browser_missing()
    if missing is not None:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but {missing}", pytrace=False)
        pytest.skip(missing)
    driver = open_browser()
    try:
        yield driver
    finally:
        driver.quit()


def screenshot(driver: Any, name: str) -> Path:
    """Save the page as ``tests/ui/screenshots/<name>.png`` (the whole page's height)."""
    SCREENSHOTS.mkdir(exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.execute_script("window.scrollTo(0, 0)")
    if height <= 900:  # no resize: it would disturb a page in use (an open dialog's focus)
        driver.save_screenshot(str(path))
        return path
    driver.set_window_size(1280, min(height, 4000))
    driver.save_screenshot(str(path))
    driver.set_window_size(1280, 900)
    return path
