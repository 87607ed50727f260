"""The ``eve`` group; subcommands load lazily so ``eve --help`` stays fast."""

from __future__ import annotations

import atexit
import functools
import gc
import importlib
from pathlib import Path
from typing import Any

import click

from eve._version import DISTRIBUTION

# name → (module, attribute, one-line help); the help lives here so `eve --help` can list
# commands without importing them (and pydantic, the compiler, the SDKs behind them).
_COMMANDS = {
    "compile": ("eve.cli.compile_command", "compile_command", "Compile agent/ into .eve/."),
    "connections": (
        "eve.cli.connections_command",
        "connections_command",
        "List the agent's MCP servers and their tools (connects to them).",
    ),
    "dev": ("eve.cli.dev_command", "dev_command", "Talk to the agent in the terminal."),
    "eval": ("eve.cli.eval_command", "eval_command", "Run the agent's evals and report."),
    "init": ("eve.cli.init_command", "init_command", "Start a new agent in a directory."),
    "info": ("eve.cli.info_command", "info_command", "Show what the compiled agent holds."),
    "memory": (
        "eve.cli.memory_command",
        "memory_command",
        "List, search and forget what the agent remembers.",
    ),
    "run": ("eve.cli.run_command", "run_command", "Run one turn and print the answer."),
    "schedules": (
        "eve.cli.schedules_command",
        "schedules_command",
        "List the agent's schedules, run one now, pause or resume one.",
    ),
    "serve": ("eve.cli.serve_command", "serve_command", "Serve the durable session API."),
    "sessions": (
        "eve.cli.sessions_command",
        "sessions_command",
        "Upkeep of the session database (prune old workflow records).",
    ),
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = _COMMANDS.get(cmd_name)
        if target is None:
            return None
        command: click.Command = getattr(importlib.import_module(target[0]), target[1])
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, target[2]) for name, target in sorted(_COMMANDS.items())]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=_LazyGroup)
@click.option(
    "-C",
    "--app-root",
    type=click.Path(file_okay=False, path_type=Path),
    default=".",
    envvar="EVE_APP_ROOT",
    show_default=True,
    help="The directory that contains agent/.",
)
@click.version_option(package_name=DISTRIBUTION)
@click.pass_context
def main(ctx: click.Context, app_root: Path) -> None:
    """eve: filesystem-first durable agents."""
    ctx.obj = {"app_root": app_root}
    _skip_the_last_collection()


@functools.cache  # once per process, however often ``main`` runs in it (tests, in process)
def _skip_the_last_collection() -> None:
    """Spare the process the garbage collection the interpreter runs as it ends.

    That last collection walks every object still alive: all that eve, DBOS, pydantic and
    the SDKs imported. On a loaded 2-core machine it held ``eve dev``'s exit for 2 to 5 s
    after its work was done (measured with py-spy: the main thread in the collector).
    Nothing of eve's is left to it: sessions are committed, MCP servers stopped and logs
    flushed before, by code and by exit handlers; those run either way (registered as the
    command starts, this one runs after the handlers of what the command sets up).
    """
    atexit.register(gc.freeze)


def app_root_of(ctx: click.Context) -> Path:
    root: Any = ctx.find_root().obj["app_root"]
    return Path(root)
