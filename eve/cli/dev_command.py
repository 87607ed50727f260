"""``eve dev``: an interactive session in the terminal that keeps the conversation."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import click
from prompt_toolkit import PromptSession

from eve.cancellation import CancelSignal
from eve.cli.agent_setup import ensure_compiled, prepare
from eve.cli.console import ConsoleRenderer
from eve.cli.errors import translate_errors
from eve.cli.main import app_root_of
from eve.context.active import EveContext
from eve.errors import EveError
from eve.execution.setup import AgentSetup
from eve.execution.loop import run_agent
from eve.execution.tool_calls import ApprovalRequest
from eve.messages import Message
from eve.redact import redact

HELP = """commands:
  /new    start a new conversation
  /exit   leave (Ctrl-D works too)
  /help   this list
Ctrl-C cancels the running turn without leaving."""


class _Input:
    """Lines from prompt_toolkit on a terminal, or plain stdin when piped (tests, scripts)."""

    def __init__(self) -> None:
        self.session: PromptSession[str] | None = None
        if sys.stdin.isatty():
            self.session = PromptSession()

    async def line(self, prompt: str) -> str | None:
        if self.session is not None:
            try:
                text: str = await self.session.prompt_async(prompt)
                return text
            except KeyboardInterrupt:
                return ""
            except EOFError:
                return None
        click.echo(prompt, nl=False)
        raw = await asyncio.to_thread(sys.stdin.readline)
        return raw.rstrip("\n") if raw else None


class DevSession:
    def __init__(self, app_root: Path, setup: AgentSetup, model: str | None) -> None:
        self.app_root = app_root
        self.setup = setup
        self.model = model
        self.input = _Input()
        self.history: list[Message] = []
        self.context = EveContext(session_id="dev")
        self.approved_once: set[str] = set()
        self.turns = 0

    async def approve(self, request: ApprovalRequest) -> bool:
        answer = await self.input.line(f"  allow {request.tool_name}({request.input})? [y/N] ")
        return (answer or "").strip().lower() in ("y", "yes")

    async def reload_if_changed(self) -> None:
        try:
            changed = ensure_compiled(self.app_root)
        except EveError as error:
            click.echo(f"eve: {error}; keeping the previous agent", err=True)
            return
        if changed:
            self.setup = await prepare(self.app_root, model=self.model, max_turns=None)
            click.echo("eve: agent/ changed; recompiled and reloaded", err=True)

    async def turn(self, text: str) -> None:
        await self.reload_if_changed()
        cancel = CancelSignal()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, cancel.cancel, "interrupted")
        renderer = ConsoleRenderer(stream_text=True)
        try:
            result = await run_agent(
                client=self.setup.client,
                system=self.setup.agent.instructions,
                tools=self.setup.agent.tools,
                user_message=text,
                messages=self.history,
                max_turns=self.setup.max_turns,
                approve=self.approve,
                signal=cancel,
                on_event=renderer,
                session_id="dev",
                turn_id=f"turn_{self.turns}",
                workspace=self.setup.workspace,
                context_budget_tokens=self.setup.context_budget_tokens,
                approved_once=self.approved_once,
                context=self.context,
            )
        except EveError as error:
            renderer.end_line()
            click.echo(f"eve: {redact(str(error))}", err=True)
            return
        finally:
            loop.remove_signal_handler(signal.SIGINT)
        renderer.end_line()
        self.turns += 1
        self.history = result.messages
        if result.stop_reason == "aborted":
            click.echo("eve: turn cancelled", err=True)
        elif result.stop_reason == "max_turns":
            click.echo("eve: stopped at the max turns limit", err=True)

    async def run(self) -> None:
        click.echo(f"eve dev · {self.setup.client.model_id} · /help for commands", err=True)
        while True:
            line = await self.input.line("you › ")
            if line is None or line.strip() == "/exit":
                return
            command = line.strip()
            if not command:
                continue
            if command == "/help":
                click.echo(HELP)
            elif command == "/new":
                self.history, self.context = [], EveContext(session_id="dev")
                self.approved_once = set()
                click.echo("eve: new conversation", err=True)
            elif command.startswith("/"):
                click.echo(f"eve: unknown command {command}; /help lists them", err=True)
            else:
                await self.turn(line)


async def _dev(app_root: Path, model: str | None) -> None:
    setup = await prepare(app_root, model=model, max_turns=None)
    await DevSession(app_root, setup, model).run()


@click.command("dev")
@click.option("--model", help="Model id to use instead of agent.py's (e.g. offline/test).")
@click.pass_context
@translate_errors
def dev_command(ctx: click.Context, model: str | None) -> None:
    """Talk to the agent in the terminal; recompiles when agent/ changes."""
    asyncio.run(_dev(app_root_of(ctx), model))
