"""The dev UI's page weight and first render, in Debian's chromium driven by selenium.

* weight: the bytes of every file the UI is made of (``eve/server/ui``), uncompressed, as
  the browser downloads them; the budget is 150 KB;
* first render: from the navigation's start (the Performance API's time origin) to the
  sessions page showing its list (the mark ``eve:sessions-rendered`` ``sessions.js`` sets),
  on a real ``eve serve`` of the example agent (``offline/test``) holding a few sessions,
  in a fresh tab each time; the target is 200 ms.

The browser tests (``tests/ui``) take the same measurement with the same functions. Run alone
with ``python -m bench.ui [--quick]``; ``run(quick=...)`` is the entry point for ``python -m
bench``. Results land in ``bench/results/ui.{json,md}``.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench._machine import machine_info
from bench._results import publish

REPO_ROOT = Path(__file__).resolve().parent.parent
UI_DIR = REPO_ROOT / "eve" / "server" / "ui"
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
WEIGHT_BUDGET_BYTES = 150 * 1024
FIRST_RENDER_TARGET_MS = 200.0
RENDERED_MARK = "eve:sessions-rendered"


def browser_missing() -> str | None:
    """Why no browser can be driven here, or None when one can."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "the selenium package is not installed (pip install -e '.[dev]')"
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not path.exists():
            return f"no {path} (Debian's {package}); run scripts/ensure-chromium"
    return None


def open_browser(width: int = 1280, height: int = 900) -> Any:
    """Headless chromium through its own chromedriver: both paths are given, so selenium's
    driver manager never looks anything up or downloads anything."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",  # root in a container has no user namespace for the sandbox
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--window-size={width},{height}",
    ):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)


def ui_weight() -> dict[str, int]:
    """Each UI file's size in bytes, uncompressed."""
    return {path.name: path.stat().st_size for path in sorted(UI_DIR.iterdir()) if path.is_file()}


def first_render_ms(driver: Any, url: str, timeout: float = 10.0) -> float:
    """Load ``url`` (the UI's root) in a fresh navigation and return when its sessions list
    first rendered, in ms from the navigation's start."""
    driver.get("about:blank")
    driver.get(url)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = driver.execute_script(
            "const m = performance.getEntriesByName(arguments[0]); "
            "return m.length ? m[0].startTime : null;",
            RENDERED_MARK,
        )
        if found is not None:
            return float(found)
        time.sleep(0.01)
    raise TimeoutError(f"{url}: the sessions list never rendered")


def transferred_bytes(driver: Any) -> int:
    """The bytes the page and its resources took (decoded), as the Performance API counts."""
    total: int = driver.execute_script(
        "return performance.getEntriesByType('navigation').concat("
        "performance.getEntriesByType('resource').filter(e => !e.name.includes('/eve/v1/')))"
        ".reduce((n, e) => n + e.decodedBodySize, 0);"
    )
    return total


# --- the benchmark ------------------------------------------------------------------------


def _serve(root: Path, port: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "EVE_WORKER_ID": "bench-ui"}
    env.pop("EVE_API_TOKEN", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "eve", "serve", "--port", str(port), "--model", "offline/test"],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    import httpx

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/eve/v1/health", timeout=1).status_code == 200:
                for message in ("What does a hammer cost?", None, None):
                    body = {"message": message} if message else {}
                    httpx.post(f"http://127.0.0.1:{port}/eve/v1/session", json=body, timeout=10)
                return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("eve serve never became healthy")


def measure(repeats: int) -> dict[str, Any]:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "shop"
        shutil.copytree(REPO_ROOT / "agent", root / "agent")
        ignore = shutil.ignore_patterns("sessions")
        shutil.copytree(REPO_ROOT / ".eve", root / ".eve", ignore=ignore)
        server = _serve(root, port)
        driver = open_browser()
        try:
            url = f"http://127.0.0.1:{port}/"
            first_render_ms(driver, url)  # warm-up: the server's first answers
            times = [first_render_ms(driver, url) for _ in range(repeats)]
            downloaded = transferred_bytes(driver)
        finally:
            driver.quit()
            server.kill()
            server.wait(10)
    weight = ui_weight()
    return {
        "repeats": repeats,
        "first_render_ms": {
            "median": round(statistics.median(times), 1),
            "min": round(min(times), 1),
            "max": round(max(times), 1),
        },
        "weight_bytes": sum(weight.values()),
        "downloaded_bytes": downloaded,
        "files": weight,
    }


def render_markdown(report: dict[str, Any]) -> str:
    render = report["first_render_ms"]
    weight = report["weight_bytes"]
    m = report["machine"]
    machine = (
        f"Python {m['python']}, {m['platform']}, {m['cpu_count']} CPUs, "
        f"1-minute load {m['load_average_1m']:.2f}"
    )
    lines = [
        "# Dev UI benchmark",
        "",
        f"Measured {report['at']} on {machine}; `python -m bench --only ui`.",
        "",
        "Headless chromium (selenium) on `eve serve --model offline/test` of the example agent "
        "with three sessions; first render is from the navigation's start to the sessions list "
        f"on screen, over {report['repeats']} fresh navigations after a warm-up.",
        "",
        "| figure | value |",
        "|---|---:|",
        f"| first render, median | {render['median']} ms |",
        f"| first render, min / max | {render['min']} / {render['max']} ms |",
        f"| UI files, uncompressed | {weight:,} bytes |",
        f"| downloaded by the page (decoded, API answers left out) | "
        f"{report['downloaded_bytes']:,} bytes |",
        "",
        "| file | bytes |",
        "|---|---:|",
        *[f"| {name} | {size:,} |" for name, size in report["files"].items()],
        "",
        "## Targets",
        "",
        *[
            f"- {'PASS' if t['passed'] else 'MISS'} {t['name']}: {t['value']} (target ≤ "
            f"{t['target']}) - {t['what']}"
            for t in report["targets"]
        ],
        "",
    ]
    return "\n".join(lines)


def run(quick: bool = False) -> dict[str, Any]:
    missing = browser_missing()
    if missing:
        print(f"ui: skipped: {missing}")
        return {}
    report = measure(repeats=3 if quick else 20)
    render = report["first_render_ms"]["median"]
    report["targets"] = [
        {
            "name": "first_render",
            "value": render,
            "target": FIRST_RENDER_TARGET_MS,
            "passed": render <= FIRST_RENDER_TARGET_MS,
            "what": "navigation start to the sessions list on screen, median ms",
        },
        {
            "name": "weight",
            "value": report["weight_bytes"],
            "target": WEIGHT_BUDGET_BYTES,
            "passed": report["weight_bytes"] <= WEIGHT_BUDGET_BYTES,
            "what": "all UI files, uncompressed bytes",
        },
    ]
    report["at"] = datetime.now(UTC).isoformat(timespec="seconds")
    report["machine"] = machine_info()
    publish("ui", report, render_markdown(report), quick=quick)
    return report


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
