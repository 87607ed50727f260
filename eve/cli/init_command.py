"""``eve init [DIR] [--example]``: a new app that compiles, runs offline and passes its eval."""

from __future__ import annotations

from pathlib import Path

import click

from eve._scaffold import create_app
from eve.cli.errors import translate_errors
from eve.cli.main import app_root_of


@click.command("init")
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--example",
    is_flag=True,
    help="Copy eve's full example agent (tools, approvals, subagents, skills, evals, MCP).",
)
@click.pass_context
@translate_errors
def init_command(ctx: click.Context, directory: Path | None, example: bool) -> None:
    """Start a new agent in DIRECTORY (default: the app root): agent/, .gitignore, README."""
    root = directory if directory is not None else app_root_of(ctx)
    written = create_app(root, "example" if example else "app")
    from eve.compiler import compile_to_disk

    compile_to_disk(root)
    click.echo(f"eve: wrote {len(written)} files to {root} and compiled them into .eve/")
    shown = root.as_posix()
    go = "" if root.resolve() == Path.cwd().resolve() else f"cd {shown} && "
    click.echo("Next:")
    click.echo(f'  {go}eve run "Where is my order A-1001?"' if not example else f"  {go}eve dev")
    click.echo("  eve eval        the agent's tests (offline, no key needed)")
    click.echo("  eve dev --web   talk to it in a browser")
