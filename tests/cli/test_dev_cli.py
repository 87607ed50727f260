"""eve dev driven through a pipe: turns, commands, approvals and recompiling between turns."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import AppFactory, wait_for_file

APP = {
    "agent/agent.py": "from eve import define_agent\ndefault = define_agent(model='offline/test')\n",
    "agent/tools/greet.py": """
        from eve.tools import tool
        from eve.tools.approval import always

        @tool(approval=always())
        def greet(name: str) -> str:
            '''Greet.'''
            return "hi " + name
    """,
}


def start(root: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "eve", "dev"],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
    )


def read_until(process: subprocess.Popen[str], marker: str) -> str:
    assert process.stdout is not None
    seen = ""
    deadline = time.monotonic() + 30
    while marker not in seen:
        assert time.monotonic() < deadline, f"never saw {marker!r} in {seen!r}"
        char = process.stdout.read(1)
        assert char, f"dev exited before {marker!r}: {seen!r}"
        seen += char
    return seen


def send(process: subprocess.Popen[str], line: str) -> None:
    assert process.stdin is not None
    process.stdin.write(line + "\n")
    process.stdin.flush()


def test_a_dev_conversation(make_app: AppFactory) -> None:
    root = make_app(APP)
    process = start(root)
    read_until(process, "you › ")
    send(process, "hello")
    read_until(process, "allow greet({'name': 'example'})? [y/N] ")
    send(process, "y")
    first = read_until(process, "you › ")
    assert "- greet: hi example" in first
    send(process, "/help")
    assert "/new    start a new conversation" in read_until(process, "you › ")
    (root / "agent/tools/greet.py").write_text(
        APP["agent/tools/greet.py"].replace("hi ", "hello ").replace("\n        ", "\n").lstrip()
    )
    send(process, "again")
    read_until(process, "[y/N] ")
    send(process, "n")
    denied = read_until(process, "you › ")
    assert "- greet: error: greet needs approval and a person denied this call" in denied
    send(process, "/new")
    read_until(process, "you › ")
    send(process, "third")
    read_until(process, "[y/N] ")
    send(process, "yes")
    assert "- greet: hello example" in read_until(process, "you › ")  # recompiled between turns
    send(process, "/exit")
    _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "eve dev · offline/test" in err
    assert "agent/ changed; recompiled and reloaded" in err
    assert "new conversation" in err


SLOW = {
    "agent/agent.py": "from eve import define_agent\ndefault = define_agent(model='offline/test')\n",
    "agent/tools/nap.py": """
        import asyncio
        from pathlib import Path
        from eve.tools import ToolContext, tool

        @tool
        async def nap(ctx: ToolContext) -> str:
            '''Nap until cancelled.'''
            Path("nap.started").write_text("yes")
            await asyncio.wait_for(ctx.signal.wait(), 60)
            return "woken"
    """,
}


def test_ctrl_c_cancels_the_turn_but_not_the_session(make_app: AppFactory) -> None:
    import signal

    root = make_app(SLOW)
    process = start(root)
    read_until(process, "you › ")
    send(process, "sleep")
    wait_for_file(root / "nap.started")
    process.send_signal(signal.SIGINT)
    read_until(process, "you › ")  # back at the prompt: the session survived
    send(process, "/exit")
    _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "← nap: woken" in err and "turn cancelled" in err
