"""The ``eve`` group; subcommands load lazily so ``eve --help`` stays fast."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import click

_COMMANDS = {
    "compile": ("eve.cli.compile_command", "compile_command"),
    "info": ("eve.cli.info_command", "info_command"),
    "run": ("eve.cli.run_command", "run_command"),
    "dev": ("eve.cli.dev_command", "dev_command"),
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
@click.version_option(package_name="eve")
@click.pass_context
def main(ctx: click.Context, app_root: Path) -> None:
    """eve: filesystem-first durable agents."""
    ctx.obj = {"app_root": app_root}


def app_root_of(ctx: click.Context) -> Path:
    root: Any = ctx.find_root().obj["app_root"]
    return Path(root)
