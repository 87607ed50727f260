"""``eve dev``: an interactive session in the terminal that keeps the conversation."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import click
from prompt_toolkit import PromptSession

from eve._attachments import read_attachment
from eve._cancellation import CancelSignal, unless_cancelled
from eve._redact import redact
from eve.cli.agent_setup import ensure_compiled, prepare
from eve.cli.console import ConsoleRenderer, debug_option
from eve.cli.errors import translate_errors
from eve.cli.form_prompt import fill
from eve.cli.interrupts import INTERRUPTED, CtrlC, quit_now
from eve.cli.main import app_root_of
from eve.cli.stdin_lines import StdinLines
from eve.errors import EveError, FormAnswerInvalid, SessionNotActive
from eve.events import (
    CompactionFailed,
    FormRequest,
    InputRequest,
    InputRequested,
    InputResolved,
    QuestionRequest,
    SessionCompacted,
    SessionCompleted,
    SessionEvent,
    SessionLimitRequest,
    SessionWaiting,
    ToolApprovalRequest,
    TurnCancelled,
    TurnCompleted,
    TurnFailed,
    decode_event,
)
from eve.execution.setup import AgentSetup
from eve.messages import MediaPart, user_message
from eve.runtime.connections import close_pool
from eve.schedules.scheduler import Scheduler, start_scheduler
from eve.sessions import InputResponse, SessionService, resolve_settings
from eve.sessions.settings import SESSIONS_DIR
from eve.sessions.turn_workflow import turn_id_of

HELP = """commands:
  /attach PATH  send an image or document with your next message
  /compact  fold the older history into a summary now
  /new    start a new conversation
  /exit   leave (Ctrl-D works too)
  /help   this list
Ctrl-C cancels the running turn without leaving; a second Ctrl-C quits at once."""


class _CtrlCKey(Exception):
    """Ctrl-C pressed at a terminal prompt (a key there, not a signal). Not KeyboardInterrupt:
    asyncio lets that one out of a task and through the event loop."""


class _Input:
    """Lines from prompt_toolkit on a terminal, or plain stdin when piped (tests, scripts)."""

    def __init__(self) -> None:
        self.session: PromptSession[str] | None = None
        if sys.stdin.isatty():
            self.session = PromptSession()
        self.lines = StdinLines()

    async def line(self, prompt: str, *, in_turn: bool = False) -> str | None:
        """The next line; None when input ended. Ctrl-C at a terminal prompt raises
        ``_CtrlCKey``. ``in_turn``: the turn's own SIGINT handler stays in place
        (prompt_toolkit's would replace it, and remove it when the prompt ends)."""
        if self.session is not None:
            try:
                text: str = await self.session.prompt_async(prompt, handle_sigint=not in_turn)
                return text
            except KeyboardInterrupt:
                raise _CtrlCKey from None
            except EOFError:
                return None
        click.echo(prompt, nl=False)
        return await self.lines.line()


DEV_SESSION_FILE = "dev-session"
#: how long a second Ctrl-C waits for the first one's cancel to be recorded
_CANCEL_GRACE_SECONDS = 2.0
#: dev's own worker name, so it never takes turns of an ``eve serve`` on the same database
DEV_WORKER = "eve-dev"


def dev_worker() -> str:
    """``<EVE_WORKER_ID>-dev``, else ``eve-dev``: two ``eve dev`` on one database (two people
    on one PostgreSQL) need ids of their own, and an id held by a live process is refused
    (``WorkerIdInUse``); ``-dev`` keeps it apart from ``eve serve``'s ``-<index>``."""
    given = os.environ.get("EVE_WORKER_ID")
    return f"{given}-dev" if given else DEV_WORKER


class DevSession:
    """A terminal conversation over the durable session runtime, like any API client."""

    def __init__(
        self, app_root: Path, setup: AgentSetup, model: str | None, *, debug: bool = False
    ) -> None:
        self.app_root = app_root
        self.setup = setup
        self.model = model
        self.input = _Input()
        self.renderer = ConsoleRenderer(stream_text=True, footer=True, debug=debug)
        self.session_id = ""
        self.scheduler: Scheduler | None = None
        self.cursor = 0
        #: set by the first Ctrl-C of the turn being shown: prompts stop waiting
        self.interrupted = CancelSignal()
        self._cancelling: asyncio.Future[bool] | None = None
        self.ctrl_c = CtrlC(cancel=self._cancel_turn, leave=self._quit)
        #: what ``/attach`` read, sent with the next message
        self.attached: list[MediaPart] = []

    def _service(self) -> SessionService:
        settings = resolve_settings(
            self.app_root,
            url_env=self.setup.agent.config.database_url_env,
            executor_id=dev_worker(),
        )
        return SessionService(self.setup, settings)

    @property
    def _session_file(self) -> Path:
        return self.app_root / SESSIONS_DIR / DEV_SESSION_FILE

    async def _start_service(self) -> None:
        self.service = self._service()
        await self.service.start()
        # DBOS fires the agent's registered ticks here too: this process must run them
        self.scheduler = await start_scheduler(self.app_root, self.service)

    async def _stop_service(self) -> None:
        await self.service.stop()
        # after the service: a tick DBOS runs until it stops still finds its runtime
        if self.scheduler is not None:
            self.scheduler.stop()

    async def open(self, resume: bool) -> None:
        await self._start_service()
        saved = self._session_file.read_text().strip() if self._session_file.exists() else ""
        if resume and saved:
            try:
                await self.service.require_active(saved)
            except EveError as error:
                click.echo(f"eve: cannot resume ({error}); starting a new conversation", err=True)
            else:
                self.session_id = saved
                await self.catch_up()
                return
        elif resume:
            click.echo("eve: no dev session to resume; starting a new conversation", err=True)
        await self.new_session()

    async def new_session(self) -> None:
        self.session_id = (await self.service.create()).session_id
        self.cursor = 0
        self._session_file.write_text(self.session_id + "\n")

    async def catch_up(self) -> None:
        """Skip what was already shown; finish a turn the last run left running, asking
        again whatever it was waiting for a person to answer."""
        waiting: dict[str, InputRequest] = {}
        settled: set[str] = set()  # turns whose end the log already tells
        events = await self.service.events(self.session_id, 0, follow=False)
        async for payload in events:
            if not payload:
                continue
            self.cursor += 1
            match decode_event(payload):
                case InputRequested(data=data):
                    waiting.update((r.request_id, r) for r in data.requests)
                case InputResolved(data=data):
                    waiting.pop(data.request_id, None)
                case TurnCompleted() | TurnFailed() | TurnCancelled():
                    waiting.clear()
                case SessionWaiting(data=data) | SessionCompleted(data=data):
                    settled.add(data.turn_id or "")
        # a turn whose end was logged may still be active in the engine: the last run quit
        # between the log's last write and the workflow's return. Its recovery adds nothing
        # to the log, so following it would wait forever
        active = await self.service.engine.active_turns(self.session_id)
        running = {turn_id_of(workflow_id) for workflow_id, _ in active} - {None, *settled}
        if running:
            click.echo("eve: finishing the turn the last run left behind", err=True)
            with self.interruptible():
                if waiting:
                    await self.answer(list(waiting.values()))
                await self.follow(None)
        click.echo(f"eve: resumed session {self.session_id}", err=True)

    async def reload_if_changed(self) -> None:
        try:
            if not ensure_compiled(self.app_root):
                return
            # the new agent resolved before the running service stops: an agent that cannot
            # be resolved leaves the conversation on the previous one, not on none at all
            setup = await prepare(self.app_root, model=self.model, max_turns=None)
        except EveError as error:
            click.echo(f"eve: {error}; keeping the previous agent", err=True)
            return
        await self._stop_service()
        self.setup = setup
        await self._start_service()
        click.echo("eve: agent/ changed; recompiled and reloaded", err=True)

    async def turn(self, text: str) -> None:
        await self.reload_if_changed()
        message = user_message(text, self.attached)
        # from before the send: the turn may reach its tools before send returns
        with self.interruptible():
            accepted = await self.service.send(self.session_id, message)
            self.attached = []
            await self.follow(accepted.turn_id)

    @contextlib.contextmanager
    def interruptible(self) -> Iterator[None]:
        """While a turn is shown: the first Ctrl-C cancels it, a second quits at once."""
        self.interrupted = CancelSignal()
        self._cancelling = None
        self.ctrl_c = CtrlC(cancel=self._cancel_turn, leave=self._quit)
        with self.ctrl_c.installed():
            yield

    def _cancel_turn(self) -> None:
        self.interrupted.cancel("interrupted")
        self._cancelling = asyncio.ensure_future(self.service.cancel(self.session_id))

    def _quit(self) -> None:
        """Exit with 130 now, whatever a tool is doing: once the cancel the first Ctrl-C
        asked for is recorded (then ``--resume`` ends the turn as cancelled instead of
        running its step again), and at most two seconds later."""
        cancelling = self._cancelling
        if cancelling is None or cancelling.done():
            quit_now(INTERRUPTED)
            return
        cancelling.add_done_callback(lambda _: quit_now(INTERRUPTED))
        asyncio.get_running_loop().call_later(_CANCEL_GRACE_SECONDS, quit_now, INTERRUPTED)

    async def rendered(self) -> AsyncIterator[SessionEvent]:
        """The session's events from the cursor on, each rendered as it comes."""
        events = await self.service.events(self.session_id, self.cursor, follow=True)
        async for payload in events:
            if not payload:
                continue
            self.cursor += 1
            event = decode_event(payload)
            self.renderer(event)
            yield event

    async def follow(self, turn_id: str | None) -> None:
        """Render the session's events until ``turn_id`` (any turn, if None) has ended."""
        async for event in self.rendered():
            if turn_id is not None and event.data.turn_id not in (turn_id, None):
                continue
            if isinstance(event, InputRequested):
                await self.answer(event.data.requests)
            elif event.data.parent is not None:
                continue  # a subagent's turn ends inside this one
            elif isinstance(event, TurnFailed):
                self.renderer.end_line()
                click.echo(f"eve: {event.data.error}", err=True)
            elif isinstance(event, TurnCancelled):
                self.renderer.end_line()
                click.echo("eve: turn cancelled", err=True)
            elif isinstance(event, SessionWaiting | SessionCompleted):
                self.renderer.end_line()
                if isinstance(event, SessionCompleted):
                    click.echo(f"eve: the session ended ({event.data.reason})", err=True)
                return

    async def compact(self) -> None:
        """Queue a compaction and show its event once it ran (after any queued turns)."""
        await self.service.compact(self.session_id)
        async for event in self.rendered():
            ran = isinstance(event, SessionCompacted | CompactionFailed)
            if ran and event.data.turn_id is None:
                self.renderer.end_line()
                return

    async def answer(self, requests: list[InputRequest]) -> None:
        self.renderer.end_line()
        responses = []
        for request in requests:
            if isinstance(request, FormRequest):
                await self.fill_form(request)
                continue
            option = await self.choose(request)
            if option is None:
                return  # input ended, or Ctrl-C cancelled the turn: nothing is answered
            responses.append(InputResponse(request_id=request.request_id, option_id=option))
        if responses:
            await self.service.respond(self.session_id, responses)

    async def fill_form(self, request: FormRequest) -> None:
        """An MCP server's form, a line per field, asked again while the session finds
        the values wrong; unanswered when input ends (the turn's cancel closes it)."""
        while True:
            option, values = await fill(
                request.connection,
                request.message,
                request.schema,
                self.ask,
                lambda s: click.echo(s, err=True),
            )
            if not option:
                return
            answer = InputResponse(request_id=request.request_id, option_id=option, values=values)
            try:
                await self.service.respond(self.session_id, [answer])
                return
            except FormAnswerInvalid as error:
                click.echo(f"  {error.problems}", err=True)

    async def ask(self, prompt: str) -> str | None:
        """A reply at a prompt inside the turn; None when input ended or Ctrl-C was pressed
        (at a terminal prompt it is a key, not a signal: it counts as the first press)."""
        try:
            return await unless_cancelled(self.interrupted, self.input.line(prompt, in_turn=True))
        except _CtrlCKey:
            self.ctrl_c()
            return None

    async def choose(
        self, request: ToolApprovalRequest | QuestionRequest | SessionLimitRequest
    ) -> str | None:
        """The option picked for one request (an approval is denied when input ended); None
        when input ended or the turn is being cancelled: the request stays open, for the
        cancel to close or for --resume to ask again."""
        if isinstance(request, ToolApprovalRequest):
            said = await self.ask(f"  allow {request.tool_name}({request.input})? [y/N] ")
            if said is None and self.interrupted.cancelled:
                return None
            return "approve" if (said or "").strip().lower() in ("y", "yes") else "deny"
        if isinstance(request, SessionLimitRequest):
            asked = (
                f"  the session reached {request.limit} ({request.used} of {request.allowed}); "
                f"raise it by {request.raise_by}? [y/N] "
            )
            reply = await self.ask(asked)
            if reply is None:
                return None
            return "raise" if reply.strip().lower() in ("y", "yes") else "end"
        options = [option.id for option in request.options]
        while True:
            asked = f"  {request.tool_name} asks: {request.question} [{'/'.join(options)}] "
            reply = await self.ask(asked)
            if reply is None:
                return None
            if reply.strip() in options:
                return reply.strip()
            click.echo(f"  answer one of: {', '.join(options)}", err=True)

    async def run(self) -> None:
        click.echo(f"eve dev · {self.setup.client.model_id} · /help for commands", err=True)
        try:
            await self.loop()
        finally:
            await self._stop_service()

    async def loop(self) -> None:
        while True:
            try:
                line = await self.input.line("you › ")
            except _CtrlCKey:
                continue  # Ctrl-C at the prompt discards the line
            if line is None or line.strip() == "/exit":
                return
            command = line.strip()
            if not command:
                continue
            if command == "/help":
                click.echo(HELP)
            elif command == "/compact":
                await self.compact()
            elif command == "/new":
                await self.new_session()
                click.echo("eve: new conversation", err=True)
            elif command == "/attach" or command.startswith("/attach "):
                self.attach(command.removeprefix("/attach").strip())
            elif command.startswith("/"):
                click.echo(f"eve: unknown command {command}; /help lists them", err=True)
            else:
                try:
                    await self.turn(line)
                except EveError as error:
                    click.echo(f"eve: {redact(str(error))}", err=True)
                    if isinstance(error, SessionNotActive):
                        await self.new_session()
                        click.echo("eve: new conversation", err=True)

    def attach(self, path: str) -> None:
        if not path:
            click.echo("eve: /attach PATH (an image or document to send)", err=True)
            return
        try:
            part = read_attachment(Path(path).expanduser())
        except EveError as error:
            click.echo(f"eve: {error}", err=True)
            return
        self.attached.append(part)
        size = len(part.data or b"")
        click.echo(
            f"eve: attached {path} ({part.media_type}, {size} bytes); "
            "it goes with your next message",
            err=True,
        )


async def _dev(app_root: Path, model: str | None, resume: bool, *, debug: bool) -> None:
    setup = await prepare(app_root, model=model, max_turns=None)
    session = DevSession(app_root, setup, model, debug=debug)
    try:
        await session.open(resume)
        await session.run()
    finally:
        # on every exit (EOF, /quit, Ctrl-C): no MCP server outlives eve dev
        await close_pool()


@click.command("dev")
@click.option("--model", help="Model id to use instead of agent.py's (e.g. offline/test).")
@click.option("--resume", is_flag=True, help="Continue the last dev conversation.")
@click.option("--web", is_flag=True, help="Serve the dev UI on 127.0.0.1 and open it in a browser.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8000,
    show_default=True,
    help="With --web: the port (0 picks a free one).",
)
@click.option("--no-browser", is_flag=True, help="With --web: print the URL, open nothing.")
@click.option(
    "--allowed-host",
    "allowed_host",
    multiple=True,
    metavar="NAME",
    help="With --web: a Host name to answer besides loopback (repeatable).",
)
@debug_option
@click.pass_context
@translate_errors
def dev_command(
    ctx: click.Context,
    model: str | None,
    resume: bool,
    web: bool,
    port: int,
    no_browser: bool,
    allowed_host: tuple[str, ...],
    debug: bool,
) -> None:
    """Talk to the agent in the terminal, or with --web in the browser; recompiles when
    agent/ changes.

    The conversation is a durable session in the app's database: ``--resume`` continues
    it after you quit, or after a crash. ``--web`` serves the session API and the dev UI
    on loopback and prints its URL, with a token made for the run.
    """
    app_root = app_root_of(ctx)
    if not web:
        asyncio.run(_dev(app_root, model, resume, debug=debug))
        return
    from eve.cli.dev_web import serve_web  # the server's imports only when asked for

    if ensure_compiled(app_root):
        click.echo("eve: agent/ changed since the last compile; recompiled .eve/", err=True)
    asyncio.run(
        serve_web(
            app_root,
            model=model,
            port=port,
            open_browser=not no_browser,
            worker=dev_worker(),
            allowed_host=allowed_host,
        )
    )
