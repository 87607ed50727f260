"""``eve compile [--check]``.

``--check`` runs on ``eve.artifacts`` alone; the compiler (and pydantic, jsonschema and the
authored modules it imports) loads only when compiling, so the check starts as fast as
``eve --help`` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from eve.artifacts import check_artifacts
from eve.cli.errors import translate_errors
from eve.cli.main import app_root_of
from eve.errors import CompileFailed

if TYPE_CHECKING:
    from eve.compiler.pipeline import CompileResult


def _summary(result: CompileResult) -> str:
    manifest = result.manifest
    assert manifest is not None
    tools = sum(len(node.tools) for node in manifest.nodes.values())
    skills = sum(len(node.skills) for node in manifest.nodes.values())
    sink = result.diagnostics
    return (
        f"eve: compiled agent/ → .eve/ ({len(manifest.nodes)} node(s), {tools} tool(s), "
        f"{skills} skill(s); {sink.count('error')} error(s), {sink.count('warning')} warning(s))"
    )


def _check(ctx: click.Context) -> None:
    report = check_artifacts(app_root_of(ctx))
    if report.fresh:
        click.echo("eve: artifacts are fresh")
        return
    click.echo("eve: artifacts are stale:", err=True)
    for label, paths in (
        ("added", report.added),
        ("removed", report.removed),
        ("changed", report.changed),
        ("plugin", report.plugins),
        ("problem", report.problems),
    ):
        for path in paths:
            click.echo(f"  {label}: {path}", err=True)
    click.echo("Run `eve compile` and commit .eve/.", err=True)
    raise SystemExit(1)


@click.command("compile")
@click.option(
    "--check", is_flag=True, help="Exit 1 if .eve/ is stale; imports nothing, writes nothing."
)
@click.option("--no-cache", is_flag=True, help="Ignore .eve/cache/ and redo every step.")
@click.pass_context
@translate_errors
def compile_command(ctx: click.Context, check: bool, no_cache: bool) -> None:
    """Compile agent/ into the artifacts under .eve/."""
    if check:
        _check(ctx)
        return
    from eve.compiler import compile_to_disk
    from eve.compiler.diagnostics import format_diagnostic

    try:
        result = compile_to_disk(app_root_of(ctx), use_cache=not no_cache)
    except CompileFailed as failure:
        for diagnostic in failure.diagnostics:
            click.echo(format_diagnostic(diagnostic), err=True)
        click.echo(f"eve: {failure}; the previous artifacts were left in place", err=True)
        raise SystemExit(1) from None
    for diagnostic in result.diagnostics.items:
        click.echo(format_diagnostic(diagnostic), err=True)
    click.echo(_summary(result))
