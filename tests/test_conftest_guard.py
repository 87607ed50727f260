"""The conftest guard: no provider key reaches a test or its subprocesses, no connection
leaves the machine, and a test marked ``allow_network`` opts out of the second."""

from __future__ import annotations

import pytest

from tests.conftest import REPO_ROOT

INNER = """
import os
import socket
import subprocess
import sys

import pytest

from conftest import NetworkRefused


def test_no_provider_key_in_the_test_or_a_subprocess():
    assert "ANTHROPIC_API_KEY" not in os.environ and "OPENAI_API_KEY" not in os.environ
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(sorted(os.environ))"],
        capture_output=True, text=True, check=True,
    )
    assert "ANTHROPIC_API_KEY" not in child.stdout and "OPENAI_API_KEY" not in child.stdout


def test_a_connection_beyond_loopback_is_refused():
    with pytest.raises(NetworkRefused, match="192.0.2.1"):
        socket.create_connection(("192.0.2.1", 80), timeout=0.1)
    with pytest.raises(NetworkRefused, match="api.anthropic.com"):
        socket.getaddrinfo("api.anthropic.com", 443)
    with socket.socket() as sock, pytest.raises(NetworkRefused):
        sock.connect_ex(("192.0.2.1", 80))


def test_loopback_is_allowed():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.create_connection(server.getsockname(), timeout=5):
            pass


@pytest.mark.allow_network
def test_a_marked_test_may_look_up_any_address():
    # a numeric lookup sends nothing, yet the guard would refuse it
    assert socket.getaddrinfo("192.0.2.1", 80)
"""


def test_the_guard_fires_and_a_mark_opts_out(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-not-a-real-key")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-a-real-key")
    # the copied conftest loads the plugin tests.slow_first from the repository
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    pytester.makeconftest((REPO_ROOT / "tests" / "conftest.py").read_text(encoding="utf-8"))
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
