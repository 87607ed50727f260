"""A stdio server's stderr as eve passes it on: redacted, each line cut, the whole bounded
(a real process floods the pipe); the SDK's own log lines redacted too."""

from __future__ import annotations

import io
import logging
import subprocess
import sys

import pytest

from eve._redact import REDACTED, add_secret
from eve.connections.server_stderr import LINE_CHARS, PASSED_CHARS, StderrTail

FLOOD = """
import sys
for _ in range(5_000):
    sys.stderr.write("token=stderr-secret-value-1234 " + "x" * 100 + "\\n")
sys.stderr.write("y" * 10_000 + "\\n")
sys.stderr.write("the last line\\n")
"""


def test_a_flooding_server_is_redacted_cut_and_bounded() -> None:
    add_secret("stderr-secret-value-1234")
    sink = io.StringIO()
    tail = StderrTail(sink)
    assert tail.file is not None
    subprocess.run([sys.executable, "-c", FLOOD], stderr=tail.file, check=True)
    assert "the last line" in tail.explain()
    passed = sink.getvalue()
    assert "stderr-secret-value-1234" not in passed
    assert f"token={REDACTED} " in passed
    assert len(passed) < PASSED_CHARS + 1_000
    assert passed.rstrip("\n").endswith(f"further stderr is dropped: {PASSED_CHARS} characters]")


def test_a_long_line_is_cut_with_a_note() -> None:
    sink = io.StringIO()
    tail = StderrTail(sink)
    assert tail.file is not None
    subprocess.run(
        [sys.executable, "-c", "import sys; sys.stderr.write('z' * 9_000 + '\\n')"],
        stderr=tail.file,
        check=True,
    )
    tail.explain()
    assert sink.getvalue() == "z" * LINE_CHARS + f" [{9_000 - LINE_CHARS} more characters]\n"


def test_the_sdks_own_log_lines_are_redacted(caplog: pytest.LogCaptureFixture) -> None:
    import eve.connections.pool  # noqa: F401  (installs the filters on the SDK's loggers)

    add_secret("sdk-log-secret-value-5678")
    with caplog.at_level(logging.WARNING, logger="mcp.client.streamable_http"):
        logging.getLogger("mcp.client.streamable_http").warning(
            "server said: %s", "bad key sdk-log-secret-value-5678"
        )
    assert caplog.messages == [f"server said: bad key {REDACTED}"]
