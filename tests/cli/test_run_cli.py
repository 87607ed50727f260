"""eve run as a subprocess: exit codes, SIGINT, transcripts, JSON events, the offline fallback."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from eve.cli import main
from eve.cli.run_command import INTERRUPTED_CALL
from eve.execution import load_transcript
from eve.execution.tool_calls import ABORTED_BEFORE_EXECUTION
from eve.messages import ToolResultMessage
from tests import forked
from tests.cli.terminal import Terminal, read_until
from tests.conftest import AppFactory, wait_for_file

SCRIPTED = {
    "agent/agent.py": """
        from eve import define_agent
        default = define_agent(model="offline/script:script.json", limits={"max_turns": 3})
    """,
    "agent/tools/wait_a_bit.py": """
        import asyncio
        from pathlib import Path
        from eve.tools import ToolContext, tool

        # alone: a second call waits for the first, so a cancel closes it unrun
        @tool(parallel=False)
        async def wait_a_bit(seconds: float, ctx: ToolContext) -> str:
            '''Wait, unless the turn is cancelled.'''
            Path("tool.started").write_text("yes")
            try:
                await asyncio.wait_for(ctx.signal.wait(), seconds)
                return "stopped early"
            except TimeoutError:
                return "waited"
    """,
}


#: a sync tool that blocks its thread: nothing can interrupt it
BLOCKING_TOOL = """
    import time
    from pathlib import Path
    from eve.tools import tool

    @tool
    def block() -> str:
        '''Block the thread for a minute.'''
        with Path("block.runs").open("a") as runs:
            runs.write("run\\n")
        time.sleep(60)
        return "woke"
"""


def eve_process(root: Path, *args: str, env: dict[str, str] | None = None) -> forked.Command:
    return forked.popen(
        [sys.executable, "-m", "eve", *args],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def eve_in_process(
    root: Path,
    *args: str,
    stdin: str | None = None,
    env: Mapping[str, str | None] | None = None,
) -> Result:
    """``eve ARGS`` in ``root``, in this process through click's ``CliRunner``: a process of
    its own would only add a second of imports. ``env`` is what to set (``None``: unset) in
    the environment while it runs; an exception other than an exit is raised here."""
    with contextlib.chdir(root):
        done = CliRunner().invoke(main, list(args), input=stdin, env=env)
    if done.exception is not None and not isinstance(done.exception, SystemExit):
        raise done.exception
    return done


def eve_run(
    root: Path,
    *args: str,
    env: Mapping[str, str | None] | None = None,
    answers: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``eve run`` in ``root``, in this process; ``answers`` is its standard input (what it
    asks a person). What needs a process (a signal, what a fresh interpreter imports or
    prints through logging's last resort) uses ``eve_run_process``."""
    done = eve_in_process(root, "run", *args, stdin=answers, env=env)
    return subprocess.CompletedProcess(
        ["eve", "run", *args], done.exit_code, done.stdout, done.stderr
    )


def eve_run_process(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``eve run`` as a process of its own, for what only a fresh interpreter shows."""
    process = eve_process(root, "run", *args, env=env)
    out, err = process.communicate(timeout=60)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def scripted_app(
    make_app: AppFactory, responses: list[dict[str, object]], tools: dict[str, str] | None = None
) -> Path:
    root = make_app({**SCRIPTED, **(tools or {})})
    (root / "script.json").write_text(json.dumps(responses))
    return root


def test_complete_prints_the_final_text_and_exits_0(make_app: AppFactory) -> None:
    root = scripted_app(
        make_app,
        [
            {"tool_calls": [{"name": "wait_a_bit", "input": {"seconds": 0.01}}]},
            {"text": "all done"},
        ],
    )
    done = eve_run(root, "go", "--session", "s.jsonl")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "all done\n"
    assert "→ wait_a_bit(seconds=0.01)" in done.stderr and "← wait_a_bit: waited" in done.stderr
    lines = [json.loads(line) for line in (root / "s.jsonl").read_text().splitlines()]
    assert [m["role"] for m in lines] == ["user", "assistant", "tool", "assistant"]


def test_max_turns_exits_2(make_app: AppFactory) -> None:
    call = {"tool_calls": [{"name": "wait_a_bit", "input": {"seconds": 0}}]}
    root = scripted_app(make_app, [call, call, call])
    done = eve_run(root, "go", "--max-turns", "2")
    assert done.returncode == 2
    assert "stopped after 2 model request(s)" in done.stderr


def test_failure_exits_1_with_one_line(make_app: AppFactory) -> None:
    root = scripted_app(make_app, [])
    done = eve_run(root, "go")
    assert done.returncode == 1
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith("eve: offline script script.json has 0 response(s)")
    )


def test_sigint_during_a_slow_tool_cancels_and_exits_130(make_app: AppFactory) -> None:
    root = scripted_app(
        make_app,
        [
            {
                "tool_calls": [
                    {"name": "wait_a_bit", "input": {"seconds": 60}},
                    {"name": "wait_a_bit", "input": {"seconds": 60}},
                ]
            },
            {"text": "never reached"},
        ],
    )
    process = eve_process(root, "run", "go", "--session", "s.jsonl")
    wait_for_file(root / "tool.started")
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert "turn cancelled" in err and "never reached" not in out
    results = [m for m in load_transcript(root / "s.jsonl") if isinstance(m, ToolResultMessage)]
    assert [(r.content, r.is_error) for r in results] == [
        ("stopped early", False),
        ("aborted before execution", True),
    ]


def test_a_second_sigint_quits_at_once_while_a_sync_tool_blocks(make_app: AppFactory) -> None:
    block = {"name": "block", "input": {}}
    root = scripted_app(
        make_app,
        [{"tool_calls": [block, block]}, {"text": "never reached"}],
        tools={"agent/tools/block.py": BLOCKING_TOOL},
    )
    process = eve_process(root, "run", "go", "--session", "s.jsonl")
    try:
        wait_for_file(root / "block.runs")
        process.send_signal(signal.SIGINT)
        assert process.stderr is not None
        read_until(process.stderr, "eve: cancelling (Ctrl-C again to quit now)")
        assert process.poll() is None  # the turn waits for the tool, which cannot be stopped
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=20)  # a bound below the tool's 60 s
    finally:
        process.kill()
    assert process.returncode == 130, err
    assert "eve: quitting now" in err and "never reached" not in out
    # the transcript stays one a model accepts: every call has its result
    results = [m for m in load_transcript(root / "s.jsonl") if isinstance(m, ToolResultMessage)]
    assert [(r.content, r.is_error) for r in results] == [
        (INTERRUPTED_CALL, True),
        (ABORTED_BEFORE_EXECUTION, True),
    ]
    assert (root / "s.jsonl.state.json").exists()


@pytest.mark.parametrize(
    ("app", "prompt", "result"),
    [
        # greet needs approval
        ("APP", "Allow greet({'name': 'example'})? [y/N]: ", ABORTED_BEFORE_EXECUTION),
        # a workflow tool's question
        (
            "ASKING",
            "confirm asks: Friday? [yes/no] ",
            "TaskCancelled: the turn was cancelled while the tool asked a question",
        ),
    ],
)
def test_sigint_at_a_prompt_cancels_instead_of_answering(
    make_app: AppFactory, app: str, prompt: str, result: str
) -> None:
    from tests.cli import test_dev_cli

    root = make_app(getattr(test_dev_cli, app))
    # stdin is a terminal: eve asks only there
    terminal = Terminal(root, "run", "hi", "--json", "--session", "s.jsonl", pipes=True)
    process = terminal.process
    try:
        assert process.stderr is not None
        read_until(process.stderr, prompt)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=20)
    finally:
        process.kill()
    assert process.returncode == 130, err
    assert "eve: turn cancelled" in err
    types = [json.loads(line)["type"] for line in out.splitlines()]
    assert types[-1] == "turn.cancelled" and "input.resolved" not in types
    results = [m for m in load_transcript(root / "s.jsonl") if isinstance(m, ToolResultMessage)]
    # neither denied nor answered: cancelled
    assert [(r.content, r.is_error) for r in results] == [(result, True)]


def test_json_prints_the_event_stream(make_app: AppFactory) -> None:
    root = scripted_app(make_app, [{"text": "hello there"}])
    done = eve_run(root, "hi", "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert [e["type"] for e in events][:3] == ["turn.started", "message.received", "step.started"]
    assert events[-1]["type"] == "turn.completed"
    assert [e["meta"]["index"] for e in events] == list(range(len(events)))


def test_without_credentials_the_offline_model_runs(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/agent.py": "from eve import define_agent\ndefault = define_agent(model='openai/gpt-4o-mini')\n",
            "agent/tools/greet.py": "from eve.tools import tool\n@tool\ndef greet(name: str) -> str:\n    'Greet.'\n    return 'hi ' + name\n",
        }
    )
    unset = {k: None for k in os.environ if k.startswith(("OPENAI", "ANTHROPIC"))}
    process = eve_run(root, "hello", env=unset)
    assert process.returncode == 0, process.stderr
    assert (
        "OPENAI_API_KEY is not set, so openai/gpt-4o-mini is unavailable; using the offline model"
        in process.stderr
    )
    assert "- greet: hi example" in process.stdout
    assert "recompiled" in process.stderr  # it compiled the never-compiled agent first


def test_a_provider_error_never_shows_the_key(make_app: AppFactory) -> None:
    from tests.models.sse_server import ScriptedServer, json_reply

    key = "sk-ant-api03-REAL-LOOKING-SECRET-0123456789"
    root = make_app(
        {
            "agent/agent.py": "from eve import define_agent\ndefault = define_agent(model='anthropic/claude-sonnet-4-5')\n",
        }
    )
    echo = {
        "type": "error",
        "error": {"type": "authentication_error", "message": f"invalid x-api-key: {key}"},
    }
    with ScriptedServer(json_reply(401, echo)) as server:
        done = eve_run(
            root,
            "hi",
            "--json",
            "--session",
            "s.jsonl",
            env={"ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL": server.url},
        )
        assert len(server.requests) == 1  # the real SDK really called the server
    assert done.returncode == 1
    assert "eve: anthropic: HTTP 401" in done.stderr
    everything = done.stdout + done.stderr + (root / "s.jsonl").read_text()
    assert key not in everything and "REAL-LOOKING" not in everything
    assert "[redacted]" in done.stderr
