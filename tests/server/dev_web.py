"""``eve dev --web`` as a process, and the URL it prints: the page, and the run's token in
the fragment."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests import forked

#: the line ``eve dev --web`` prints once it accepts connections
URL_LINE = re.compile(r"(http://127\.0\.0\.1:\d+/)(#token=([A-Za-z0-9_-]+))?")


@dataclass(frozen=True)
class DevWeb:
    #: the line it printed
    line: str
    #: the UI's address, ``http://127.0.0.1:<port>/``
    page: str
    #: the token in the printed URL's fragment; None when EVE_API_TOKEN was given
    token: str | None
    #: the process, whose stderr goes on after the URL's line (the channels' lines)
    process: forked.Command

    @property
    def url(self) -> str:
        """The URL as printed and opened."""
        return self.page if self.token is None else f"{self.page}#token={self.token}"

    def auth(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.token}"}


@contextmanager
def dev_web(root: Path, env: Mapping[str, str], *args: str) -> Iterator[DevWeb]:
    """``eve dev --web --port 0`` in ``root`` until the block ends (then killed); it has
    ``EVE_API_TOKEN`` only when ``env`` gives it."""
    inherited = {k: v for k, v in os.environ.items() if k != "EVE_API_TOKEN"}
    process = forked.popen(
        [sys.executable, "-m", "eve", "dev", "--web", "--port", "0", *args],
        cwd=root,
        env={**inherited, **env},
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
        found = URL_LINE.search(line)
        assert found is not None, line
        yield DevWeb(line=line, page=found[1], token=found[3], process=process)
    finally:
        process.kill()
        process.wait(10)
