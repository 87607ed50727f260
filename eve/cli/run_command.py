"""``eve run "PROMPT"``: one turn, the final text on stdout, an honest exit code.

``--attach PATH`` (repeatable) sends images and documents with the prompt.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import click
import msgspec

from eve._attachments import read_attachment
from eve._cancellation import CancelSignal, unless_cancelled
from eve.authoring.workflow import AskHook, Question
from eve.cli.agent_setup import prepare
from eve.cli.console import ConsoleRenderer, debug_option
from eve.cli.errors import translate_errors
from eve.cli.form_prompt import TerminalForms
from eve.cli.interrupts import INTERRUPTED, CtrlC, quit_now
from eve.cli.main import app_root_of
from eve.cli.stdin_lines import StdinLines
from eve.connections import authorization
from eve.context.active import EveContext
from eve.errors import EveError
from eve.events import SessionEvent
from eve.execution.environment import TurnEnvironment
from eve.execution.inline_tasks import InlineTasks
from eve.execution.loop import run_agent
from eve.execution.output import output_text
from eve.execution.result import RunResult
from eve.execution.tool_calls import ABORTED_BEFORE_EXECUTION, ApprovalHook, ApprovalRequest
from eve.execution.transcript import (
    close_open_calls,
    load_state,
    load_transcript,
    save_state,
    state_path,
)
from eve.messages import user_message

if TYPE_CHECKING:
    from eve.sessions.store import SessionStore
from eve.runtime.connections import close_pool

#: the result a second Ctrl-C gives the call that was running when eve quit
INTERRUPTED_CALL = "interrupted: eve quit while this call ran; it may have taken effect"

#: ``session_limit`` needs a person to end the session, so eve run never stops with it; a
#: limit crossed here is SessionLimitReached (its exit code, 3)
EXIT_CODES = {"complete": 0, "max_turns": 2, "aborted": INTERRUPTED, "session_limit": 3}


#: said when the last answer was cut at the output token limit (a typed answer that was cut
#: fails with OutputTruncated instead: there is no answer to print)
TRUNCATED_NOTICE = (
    "eve: the answer was cut at the output token limit (stop reason max_tokens): raise "
    'define_agent(model_settings={"max_output_tokens": ...}) for longer answers'
)


def exit_code_for(result: RunResult) -> int:
    return EXIT_CODES[result.stop_reason]


def _json_sink(event: SessionEvent) -> None:
    sys.stdout.write(msgspec.json.encode(event).decode() + "\n")
    sys.stdout.flush()


def approval_hook(auto_yes: bool, cancel: CancelSignal, lines: StdinLines) -> ApprovalHook:
    """Ask on the terminal; a Ctrl-C while asking cancels the turn (the call is closed as
    aborted, not denied)."""

    async def approve(request: ApprovalRequest) -> bool:
        if auto_yes:
            return True
        if not sys.stdin.isatty():
            click.echo(f"  ⊘ {request.tool_name} needs approval; pass --yes to allow", err=True)
            return False
        click.echo(f"Allow {request.tool_name}({request.input})? [y/N]: ", nl=False, err=True)
        answer = await unless_cancelled(cancel, lines.line())
        return answer is not None and answer.strip().lower() in ("y", "yes")

    return approve


def question_hook(cancel: CancelSignal, lines: StdinLines) -> AskHook:
    """Ask on the terminal; without one, read each answer as a line of standard input."""

    async def ask(question: Question) -> str | None:
        choices, slashed = ", ".join(question.options), "/".join(question.options)
        while True:
            if sys.stdin.isatty():
                asked = f"{question.tool_name} asks: {question.question} [{slashed}] "
                click.echo(asked, nl=False, err=True)
            line = await unless_cancelled(cancel, lines.line())
            if line is None:
                if not cancel.cancelled:
                    click.echo(
                        f"  ⊘ {question.tool_name} asks {question.question!r} ({choices}); "
                        "no answer on standard input",
                        err=True,
                    )
                return None
            if not sys.stdin.isatty() or line.strip() in question.options:
                return line.strip()
            click.echo(f"  answer one of: {choices}", err=True)

    return ask


def install_interrupt(cancel: CancelSignal, *, before_quit: Callable[[], None]) -> None:
    """First Ctrl-C cancels the turn cooperatively; a second one saves what ``before_quit``
    saves and exits at once (130), whatever a tool is doing."""

    def leave() -> None:
        try:
            before_quit()
        except EveError as error:
            click.echo(f"eve: {error}", err=True)
        quit_now(INTERRUPTED)

    handler = CtrlC(cancel=lambda: cancel.cancel("interrupted"), leave=leave)
    asyncio.get_running_loop().add_signal_handler(signal.SIGINT, handler)


def _closed_on_quit(session: Path | None, context: EveContext) -> Callable[[], None]:
    """What a second Ctrl-C saves of a ``--session`` run: the calls left without a result
    get one saying so (the transcript stays one the model accepts), and the state."""

    def save() -> None:
        if session is not None:
            close_open_calls(session, running=INTERRUPTED_CALL, not_run=ABORTED_BEFORE_EXECUTION)
            save_state(state_path(session), context.snapshot())

    return save


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """The options of ``eve run``, as click parsed them."""

    model: str | None
    session: Path | None
    max_turns: int | None
    as_json: bool
    yes: bool
    #: files sent with the prompt, in order
    attach: tuple[Path, ...] = ()
    #: ``text`` (the answer, then a typed one as JSON) or ``json`` (only the answer, as JSON)
    output: Literal["text", "json"] = "text"
    #: a failing tool's traceback under its result
    debug: bool = False


def _grant_store(app_root: Path) -> Callable[[], SessionStore]:
    opened: list[SessionStore] = []

    def store() -> SessionStore:
        if not opened:
            # imported here: a run that signs in to nothing never loads SQLAlchemy for it
            from eve.sessions.settings import resolve_settings
            from eve.sessions.store import SessionStore

            opened.append(SessionStore(resolve_settings(app_root).eve_url))
        return opened[0]

    return store


async def _run(app_root: Path, prompt: str, options: RunOptions) -> int:
    model, session, as_json = options.model, options.session, options.as_json
    # read before anything starts: a file no model takes fails the run, not the turn
    message = user_message(prompt, [read_attachment(path) for path in options.attach])
    setup = await prepare(app_root, model=model, max_turns=options.max_turns)
    cancel = CancelSignal()
    renderer = ConsoleRenderer(stream_text=False, debug=options.debug)
    lines = StdinLines()
    approve = approval_hook(options.yes, cancel, lines)
    context = EveContext(session_id="local")
    if session:
        # define_state of the conversation the transcript holds, as its last run left it
        context.restore(load_state(state_path(session)))
    install_interrupt(cancel, before_quit=_closed_on_quit(session, context))
    env = TurnEnvironment(
        signal=cancel,
        on_event=_json_sink if as_json else renderer,
        tasks=InlineTasks(setup=setup, approve=approve, ask=question_hook(cancel, lines)),
        approve=approve,
        transcript=session,
        context=context,
        forms=TerminalForms(cancel=cancel, lines=lines),
    )
    history = load_transcript(session) if session else ()
    try:
        # MCP connections keep their OAuth grants in the app's session database, opened
        # only when one signs in
        with authorization.lent(store=_grant_store(app_root)):
            result = await run_agent(setup, message, history=history, env=env)
    finally:
        if session:
            # saved whatever the turn's end: its messages are in the transcript already
            save_state(state_path(session), context.snapshot())
    if options.output == "json":
        if result.stop_reason in ("complete", "session_limit"):
            # one JSON value on stdout and nothing else, for jq: the typed answer, or the
            # text of an agent without output_schema as a JSON string
            answer = result.output
            click.echo(output_text(answer) if answer is not None else json.dumps(result.final_text))
    elif not as_json and result.final_text and result.stop_reason != "aborted":
        click.echo(result.final_text)
    if options.output == "text" and not as_json and result.output is not None:
        # the typed answer, as JSON on its own line (with --json it is in turn.completed)
        click.echo(output_text(result.output))
    if result.stop_reason == "max_turns":
        click.echo(f"eve: stopped after {setup.max_turns} model request(s) (max turns)", err=True)
    elif result.stop_reason == "aborted":
        click.echo("eve: turn cancelled", err=True)
    if result.truncated and result.stop_reason != "aborted":
        click.echo(TRUNCATED_NOTICE, err=True)
    return exit_code_for(result)


@click.command("run")
@click.argument("prompt")
@click.option("--model", help="Model id to use instead of agent.py's (e.g. offline/test).")
@click.option(
    "--session",
    type=click.Path(dir_okay=False, path_type=Path),
    help="JSONL transcript to continue and append to.",
)
@click.option("--max-turns", type=click.IntRange(min=1), help="Cap on model requests this turn.")
@click.option("--json", "as_json", is_flag=True, help="Print the event stream as NDJSON.")
@click.option(
    "--output",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="json: print only the final answer as one JSON value (the typed answer), for jq.",
)
@click.option("--yes", is_flag=True, help="Approve every tool call that needs approval.")
@click.option(
    "--attach",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="An image (.png .jpg .gif .webp) or document (.pdf .txt) to send; repeatable.",
)
@debug_option
@click.pass_context
@translate_errors
def run_command(ctx: click.Context, /, prompt: str, **options: Any) -> None:
    """Run one turn of the agent and print its answer."""
    if options["as_json"] and options["output"] == "json":
        raise click.UsageError("--json prints every event; --output json only the answer: pick one")
    raise SystemExit(asyncio.run(_run_closing(app_root_of(ctx), prompt, RunOptions(**options))))


async def _run_closing(app_root: Path, prompt: str, options: RunOptions) -> int:
    try:
        return await _run(app_root, prompt, options)
    finally:
        await close_pool()  # the MCP servers the turn started end with it
