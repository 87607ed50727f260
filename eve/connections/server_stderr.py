"""A stdio MCP server's stderr: passed through to eve's own, with its last lines kept.

What is passed through is redacted (a server may print the secrets it was given) and
bounded: each line is cut at ``LINE_CHARS`` and a server's process passes at most
``PASSED_CHARS`` in all, then one line says the rest was dropped, so a server that floods
its stderr neither fills eve's logs nor slows eve down.

When a server dies before it answers (an import error, a crash at start), the SDK reports
only "Connection closed"; the server's own last line says why, and the connection's error
quotes it. A Python server written for another major version of the ``mcp`` SDK than the one
eve runs it with gets a hint of its own: eve starts ``python`` servers with its interpreter.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from importlib.metadata import version
from typing import TextIO

from eve._redact import redact

#: lines kept: the traceback's last line is what names the failure
KEPT_LINES = 20
#: one line, at most, as passed on
LINE_CHARS = 2_000
#: all of one server process's stderr passed on, at most
PASSED_CHARS = 200_000


class StderrTail:
    """A pipe the server writes its stderr into; a thread copies it to ``sink``."""

    def __init__(self, sink: TextIO) -> None:
        read_fd, write_fd = os.pipe()
        self._reader = os.fdopen(read_fd, "r", encoding="utf-8", errors="replace")
        #: what the server process is given as its stderr (``errlog`` of the SDK)
        self.file: TextIO | None = os.fdopen(write_fd, "w", encoding="utf-8")
        self._sink = sink
        self._lines: deque[str] = deque(maxlen=KEPT_LINES)
        self._thread = threading.Thread(target=self._copy, name="eve-mcp-stderr", daemon=True)
        self._thread.start()

    def started(self) -> None:
        """The server runs with its copy of the pipe: close ours, so that the copying ends
        when the server (and whatever inherited its stderr) does."""
        if self.file is not None:
            self.file.close()
            self.file = None

    def _copy(self) -> None:
        passed = 0
        with self._reader:
            for raw in self._reader:
                line = raw.rstrip("\n")
                if len(line) > LINE_CHARS:
                    line = line[:LINE_CHARS] + f" [{len(line) - LINE_CHARS} more characters]"
                line = redact(line)
                self._lines.append(line)
                if passed > PASSED_CHARS:
                    continue  # read on, so the server never blocks on a full pipe
                passed += len(line) + 1
                if passed > PASSED_CHARS:
                    line = (
                        f"[the MCP server's further stderr is dropped: {PASSED_CHARS} characters]"
                    )
                self._pass(line + "\n")

    def _pass(self, line: str) -> None:
        try:
            self._sink.write(line)
            self._sink.flush()
        except (OSError, ValueError):  # eve's stderr is closed: keep the tail only
            pass

    def explain(self, *, wait_seconds: float = 1.0) -> str:
        """What the server said last, for an error message ("" when it said nothing);
        waits a little for its last lines once it has exited."""
        self.started()
        self._thread.join(wait_seconds)
        last = next((line.strip() for line in reversed(self._lines) if line.strip()), "")
        if not last:
            return ""
        said = f"; the server said: {last[:500].rstrip('.')}"
        if "mcp" in last and ("ModuleNotFoundError" in last or "ImportError" in last):
            said += (
                f". It looks written for another major version of the mcp SDK than the "
                f"one eve runs it with (mcp {version('mcp')}): port it, or give its command "
                "the interpreter of an environment with the version it needs"
            )
        return said
