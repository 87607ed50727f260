"""``eve dev --web``: the dev UI on loopback, its URL printed and opened in the browser."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.conftest import AppFactory


def test_dev_web_prints_the_url_opens_it_and_serves_the_ui(make_app: AppFactory) -> None:
    root = make_app()
    opened = root / "opened.txt"
    # webbrowser runs $BROWSER with the URL for %s: a stand-in browser that notes it
    note = f"import sys; open({str(opened)!r}, 'w').write(sys.argv[1])"
    env = {**os.environ, "BROWSER": f"{shlex.quote(sys.executable)} -c {shlex.quote(note)} %s"}
    env.pop("EVE_API_TOKEN", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "eve", "dev", "--web", "--port", "0"],
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = ""
        deadline = time.monotonic() + 60
        while "http://" not in line:
            assert time.monotonic() < deadline and process.poll() is None, line
            line = process.stderr.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert url is not None, line
        page = httpx.get(url.group(0), timeout=10)
        sessions = httpx.get(url.group(0) + "eve/v1/sessions", timeout=10)
        while not opened.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        process.kill()
        process.wait(10)
    assert line.startswith("eve dev · offline/test · ")
    assert page.status_code == 200 and '<script type="module" src="ui/app.js">' in page.text
    assert sessions.json() == {"ok": True, "sessions": [], "nextCursor": None}
    assert Path(opened).read_text() == url.group(0)
