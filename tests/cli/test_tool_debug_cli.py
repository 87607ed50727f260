"""``--debug`` (or ``EVE_DEBUG=1``): ``eve run`` and ``eve dev`` print a failing tool's
traceback under its result; without it, the one-line error only."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests import forked
from tests.cli.test_dev_cli import read_until, send
from tests.cli.test_run_cli import eve_run
from tests.conftest import AppFactory

APP = {
    "agent/agent.py": """
        from eve import define_agent
        default = define_agent(model="offline/script:script.json")
    """,
    "agent/tools/look_up.py": """
        from eve.tools import tool

        def _parse(code: str) -> int:
            return int(code)

        @tool
        def look_up(code: str) -> int:
            '''Look a code up.'''
            return _parse(code)
    """,
}
SCRIPT = [{"tool_calls": [{"name": "look_up", "input": {"code": "x1"}}]}, {"text": "it broke"}]
ERROR = "ValueError: invalid literal for int() with base 10: 'x1'"
#: the traceback's innermost frame, as printed under the result
INNERMOST = "        return int(code)"


def _app(make_app: AppFactory) -> Path:
    root = make_app(APP)
    (root / "script.json").write_text(json.dumps(SCRIPT))
    return root


@pytest.mark.parametrize(
    ("args", "env", "shown"),
    [(["--debug"], {}, True), ([], {"EVE_DEBUG": "1"}, True), ([], {"EVE_DEBUG": ""}, False)],
    ids=["--debug", "EVE_DEBUG=1", "neither"],
)
def test_eve_run_prints_the_traceback_only_when_asked(
    make_app: AppFactory, args: list[str], env: dict[str, str], shown: bool
) -> None:
    done = eve_run(_app(make_app), "go", *args, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "it broke\n"
    assert f"✗ look_up: {ERROR}" in done.stderr
    printed = "    Traceback (most recent call last):" in done.stderr
    assert printed is shown, done.stderr
    assert (INNERMOST in done.stderr) is shown
    if shown:  # under the result, ending with the error
        assert done.stderr.index("✗ look_up") < done.stderr.index(INNERMOST)
        assert f"\n    {ERROR}\n" in done.stderr


def test_eve_dev_debug_prints_the_traceback(make_app: AppFactory) -> None:
    process = forked.popen(
        [sys.executable, "-m", "eve", "dev", "--debug"],
        cwd=_app(make_app),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # the activity lines, in order with the prompt
        text=True,
        bufsize=1,
    )
    try:
        read_until(process, "you › ")
        send(process, "go")
        turn = read_until(process, "you › ")
        assert f"✗ look_up: {ERROR}" in turn
        assert "in _parse\n" + INNERMOST in turn
        assert process.stdin is not None
        process.stdin.close()
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
