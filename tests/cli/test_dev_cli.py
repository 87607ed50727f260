"""eve dev driven through a pipe: turns, commands, approvals and recompiling between turns."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from eve.execution.transcript import open_calls
from eve.messages import UserMessage
from eve.sessions.checkpoint import decode_checkpoint
from eve.sessions.store import SessionStore
from tests import forked
from tests.cli.terminal import Terminal
from tests.cli.terminal import read_until as read_stream
from tests.cli.test_run_cli import BLOCKING_TOOL, eve_process
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


def start(root: Path, *args: str) -> forked.Command:
    return forked.popen(
        [sys.executable, "-m", "eve", "dev", *args],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
    )


def read_until(process: forked.Command, marker: str) -> str:
    assert process.stdout is not None
    return read_stream(process.stdout, marker)


def send(process: forked.Command, line: str) -> None:
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


COUNTER = {
    "agent/agent.py": "from eve import define_agent\ndefault = define_agent(model='offline/test')\n",
    "agent/tools/tally.py": """
        from eve.context import define_state
        from eve.tools import tool

        seen = define_state("seen", 0)

        @tool
        def tally() -> int:
            '''Count this conversation's turns.'''
            return seen.update(lambda n: n + 1)
    """,
}


def piped(root: Path, lines: str, *args: str) -> tuple[str, str]:
    """``eve dev`` with its input piped in at once: a conversation whose lines need not
    wait on its output. It must exit 0; its stdout and stderr. A process of its own: in the
    test's process, DBOS launched and destroyed by one test after another once left a
    conversation waiting for a turn that never ran (a hung suite)."""
    process = eve_process(root, "dev", *args)
    out, err = process.communicate(input=lines, timeout=120)
    assert process.returncode == 0, err
    return out, err


def one_turn(root: Path, message: str, *args: str) -> tuple[str, str]:
    return piped(root, f"{message}\n/exit\n", *args)


def test_resume_continues_the_last_conversation_with_its_state(make_app: AppFactory) -> None:
    root = make_app(COUNTER)
    first, _ = one_turn(root, "one")
    assert "- tally: 1" in first
    session_id = (root / ".eve/sessions/dev-session").read_text().strip()
    resumed, err = one_turn(root, "two", "--resume")
    assert "- tally: 2" in resumed  # the same session: its define_state value went on
    assert f"eve: resumed session {session_id}" in err
    fresh, _ = one_turn(root, "three")
    assert "- tally: 1" in fresh  # without --resume, a new conversation
    assert (root / ".eve/sessions/dev-session").read_text().strip() != session_id


def test_resume_after_a_quit_that_left_the_ended_turn_active(make_app: AppFactory) -> None:
    """The last run quit after the turn's end was logged but before its workflow returned:
    the engine still lists it, and its recovery logs nothing more. Resuming must not wait
    for an end that was already shown."""
    root = make_app(COUNTER)
    one_turn(root, "one")
    session_id = (root / ".eve/sessions/dev-session").read_text().strip()
    with sqlite3.connect(root / ".eve/sessions/dbos.sqlite") as db:
        reopened = db.execute(
            "UPDATE workflow_status SET status = 'PENDING' WHERE workflow_uuid = ?",
            (f"{session_id}:turn-0",),
        ).rowcount
    assert reopened == 1
    resumed, err = one_turn(root, "two", "--resume")
    assert "finishing the turn" not in err
    assert f"eve: resumed session {session_id}" in err
    assert "- tally: 2" in resumed


def test_resume_asks_again_what_a_killed_run_was_asking(make_app: AppFactory) -> None:
    root = make_app(APP)
    process = start(root)
    read_until(process, "you › ")
    send(process, "hello")
    read_until(process, "allow greet({'name': 'example'})? [y/N] ")
    process.send_signal(signal.SIGKILL)
    process.wait(10)
    again = start(root, "--resume")
    read_until(again, "allow greet({'name': 'example'})? [y/N] ")
    send(again, "y")
    assert "- greet: hi example" in read_until(again, "you › ")
    send(again, "/exit")
    _, err = again.communicate(timeout=30)
    assert again.returncode == 0, err
    assert "finishing the turn the last run left behind" in err


ASKING = {
    "agent/agent.py": "from eve import define_agent\ndefault = define_agent(model='offline/test')\n",
    "agent/tools/confirm.py": """
        from eve.tools import WorkflowContext, define_workflow_tool

        async def confirm(data, ctx: WorkflowContext):
            return "customer said " + await ctx.ask("Friday?", options=["yes", "no"])

        default = define_workflow_tool(description="Ask the customer.", run=confirm)
    """,
}


def test_dev_asks_a_workflow_tools_question_until_it_gets_an_option(
    make_app: AppFactory,
) -> None:
    root = make_app(ASKING)
    out, err = piped(root, "deliver?\nmaybe\nno\n/exit\n")
    asked = out.index("confirm asks: Friday? [yes/no] ")
    again = out.index("[yes/no] ", asked + 1)
    assert out.index("- confirm: customer said no") > again
    assert "answer one of: yes, no" in err
    assert "⇢ confirm started (workflow-tool)" in err


def test_dev_asks_to_raise_a_session_limit_then_ends_the_session(make_app: AppFactory) -> None:
    # the offline script model counts len(text) // 4 + 1 output tokens: 11 a reply here
    limits = {"max_turns": 5, "max_output_tokens_per_session": 10}
    root = make_app(
        {
            "agent/agent.py": "from eve import define_agent\n"
            f"default = define_agent(model='offline/script:script.json', limits={limits!r})\n",
            "agent/instructions.md": "Follow the script.\n",
        },
        minimal=False,
    )
    replies = [{"text": "a" * 40}, {"text": "b" * 40}]
    (root / "script.json").write_text(json.dumps(replies))
    # "again" comes after a raise to 20, so the next crossing is at 22 of 20
    out, err = piped(root, "hello\ny\nagain\nn\n/exit\n")
    first = out.index("max_output_tokens_per_session (11 of 10); raise it by 10? [y/N] ")
    assert out.index("a" * 40) < first  # the step that crossed it streamed first
    second = out.index("max_output_tokens_per_session (22 of 20); raise it by 10? [y/N] ")
    assert first < out.index("b" * 40) < second
    assert "eve: the session ended (max_output_tokens_per_session)" in err


def dev_store(root: Path) -> tuple[SessionStore, str]:
    """The store of ``eve dev`` in ``root`` and the id of its conversation."""
    session_id = (root / ".eve/sessions/dev-session").read_text().strip()
    return SessionStore(f"sqlite:///{root / '.eve/sessions/eve.sqlite'}"), session_id


def dev_events(root: Path) -> list[dict[str, Any]]:
    store, session_id = dev_store(root)
    return [json.loads(payload) for payload in store.read_events(session_id, 0)]


def test_ctrl_c_at_an_approval_prompt_cancels_the_turn(make_app: AppFactory) -> None:
    root = make_app(APP)
    terminal = Terminal(root, "dev")
    try:
        terminal.read_until("you ›")
        terminal.type("hello\r")
        terminal.read_until("allow greet({'name': 'example'})? [y/N]")
        terminal.type("\x03")  # the key: at prompt_toolkit's prompt it is no signal
        terminal.read_until("eve: turn cancelled")
        terminal.read_until("you ›")
        terminal.type("again\r")
        terminal.read_until("[y/N]")
        terminal.process.send_signal(signal.SIGINT)  # the signal, as `kill -INT` sends it
        terminal.read_until("eve: turn cancelled")
        terminal.read_until("you ›")
        terminal.type("/exit\r")
        assert terminal.wait() == 0
    finally:
        terminal.process.kill()
    events = dev_events(root)
    assert [e["type"] for e in events].count("turn.cancelled") == 2
    resolved = [e["data"]["option_id"] for e in events if e["type"] == "input.resolved"]
    assert resolved == ["cancelled", "cancelled"]  # not denied: no call ran or was refused
    assert "action.result" not in [e["type"] for e in events]


def test_a_second_ctrl_c_quits_while_a_sync_tool_blocks(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/agent.py": "from eve import define_agent\n"
            "default = define_agent(model='offline/script:script.json')\n",
            "agent/tools/block.py": BLOCKING_TOOL,
        }
    )
    (root / "script.json").write_text(json.dumps([{"tool_calls": [{"name": "block"}]}]))
    process = start(root)
    try:
        send(process, "go")
        wait_for_file(root / "block.runs")
        process.send_signal(signal.SIGINT)
        assert process.stderr is not None
        read_stream(process.stderr, "eve: cancelling (Ctrl-C again to quit now)")
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=20)  # a bound below the tool's 60 s
    finally:
        process.kill()
    assert process.returncode == 130, err
    # resumed: the turn asked to cancel ends cancelled; its interrupted step is not run again
    _, resumed = one_turn(root, "", "--resume")
    assert "finishing the turn the last run left behind" in resumed
    assert "eve: turn cancelled" in resumed
    assert (root / "block.runs").read_text() == "run\n"
    store, session_id = dev_store(root)
    history = decode_checkpoint(store.load_checkpoint(session_id)).messages
    assert [type(m) for m in history] == [UserMessage] and open_calls(history) == []
    assert [e["type"] for e in dev_events(root)][-2:] == ["turn.cancelled", "session.waiting"]
