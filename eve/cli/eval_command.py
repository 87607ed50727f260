"""``eve eval [NAME...]``: run the agent's evals, show a table, keep the results.

Exit codes: 0 every case passed, 1 a case failed, 2 the evals could not run (an
``EvalError``, a compile that failed, stale artifacts that cannot be rebuilt).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
import msgspec
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from eve.cli.agent_setup import ensure_compiled, prepare
from eve.cli.errors import fail
from eve.cli.main import app_root_of
from eve.errors import EvalError, EveError
from eve.evals.loading import load_eval, select
from eve.evals.report import CaseRecord, EvalReport, build_report, compare, previous, save, to_junit
from eve.evals.runner import EvalOptions, LoadedEval, RunOutcome, repeats, run_evals
from eve.manifest import MANIFEST_PATH, CompiledManifest, EvalDeclaration, decode


@dataclass(frozen=True, kw_only=True)
class EvalCommandOptions:
    """The options of ``eve eval``, as click parsed them."""

    model: str | None
    repeat: int | None
    concurrency: int
    as_json: bool
    junit: Path | None
    compare: bool


def declared_evals(app_root: Path) -> list[EvalDeclaration]:
    """The evals the compiled manifest declares (compiling first when sources changed)."""
    ensure_compiled(app_root)
    manifest = decode((app_root / MANIFEST_PATH).read_bytes(), CompiledManifest)
    if not manifest.evals:
        raise EvalError("the agent has no evals: add agent/evals/<name>.py (see docs/evals.md)")
    return manifest.evals


async def _outcomes(
    app_root: Path, evals: list[LoadedEval], options: EvalCommandOptions, setup: Any
) -> list[RunOutcome]:
    run_options = EvalOptions(
        model=options.model, repeat=options.repeat, concurrency=options.concurrency
    )
    total = sum(repeats(e, case, run_options) for e in evals for case in e.definition.cases)
    with Progress(
        TextColumn("eve eval"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        console=Console(stderr=True),
        transient=True,
    ) as progress:
        task = progress.add_task("", total=total)

        def done(outcome: RunOutcome) -> None:
            mark = "✓" if outcome.passed else "✗"
            progress.update(
                task, advance=1, description=f"{mark} {outcome.eval_name} / {outcome.case}"
            )

        return await run_evals(setup, evals, run_options, on_done=done)


def _cost(case: CaseRecord) -> str:
    cost = case.cost_usd
    return "—" if cost is None else f"${cost:.4f}"


def results_table(report: EvalReport) -> Table:
    """The table ``eve eval`` prints: one row per case; a failure's first failed check."""
    table = Table(title=None, show_lines=False)
    for column in ("case", "checks", "runs", "steps", "tokens", "cost", "time", "failure"):
        table.add_column(column, overflow="fold")
    for case in report.cases:
        first = case.runs[0] if case.runs else None
        checks = f"{sum(c.passed for c in first.checks)}/{len(first.checks)}" if first else "—"
        mark = "[green]✓[/]" if case.passed else "[red]✗[/]"
        table.add_row(
            f"{mark} {case.eval} / {case.case}",
            checks,
            f"{sum(r.passed for r in case.runs)}/{len(case.runs)}",
            f"{sum(r.steps for r in case.runs) / max(len(case.runs), 1):g}",
            f"{case.tokens:.0f}",
            _cost(case),
            f"{sum(r.seconds for r in case.runs):.2f}s",
            "" if case.passed else case.first_failure(),
        )
    return table


def _summary(report: EvalReport) -> str:
    passed = sum(c.passed for c in report.cases)
    return f"{passed}/{len(report.cases)} case(s) passed"


async def _eval(app_root: Path, names: tuple[str, ...], options: EvalCommandOptions) -> int:
    chosen = select(declared_evals(app_root), names)
    setup = await prepare(app_root, model=options.model, max_turns=None, announce=False)
    evals = [load_eval(declaration) for declaration in chosen]
    started = datetime.now(UTC)
    outcomes = await _outcomes(app_root, evals, options, setup)
    report = build_report(evals, outcomes, started_at=started, model=options.model)
    kept = save(app_root, report)
    if options.as_json:
        click.echo(msgspec.json.encode(report).decode())
    else:
        console = Console()
        if not console.is_terminal:
            # a CI log has no width: rich's 80 columns would wrap every case name
            console = Console(width=160)
        console.print(results_table(report))
        click.echo(f"eve: {_summary(report)}; results in {kept.relative_to(app_root)}", err=True)
    if options.junit is not None:
        options.junit.write_text(to_junit(report), encoding="utf-8")
    if options.compare:
        _show_changes(app_root, report, kept)
    return 0 if report.passed else 1


def _show_changes(app_root: Path, report: EvalReport, kept: Path) -> None:
    before = previous(app_root, before=kept)
    if before is None:
        click.echo("eve: no previous run to compare with", err=True)
        return
    changes = [
        c
        for c in compare(before, report)
        if c.status != "same" or c.pass_rate_delta or c.tokens_delta or c.cost_delta
    ]
    click.echo(f"eve: compared with the run of {before.started_at}:", err=True)
    for change in changes:
        click.echo(f"  {change}", err=True)
    if not changes:
        click.echo("  nothing changed", err=True)


@click.command("eval")
@click.argument("names", nargs=-1)
@click.option("--model", help="Run every case on this model id instead of the cases' own.")
@click.option("--repeat", type=click.IntRange(min=1), help="Run each case N times (pass rate).")
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="How many cases run at once.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--junit",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write JUnit XML for CI to this file.",
)
@click.option("--compare", is_flag=True, help="Show what changed since the previous run.")
@click.pass_context
def eval_command(ctx: click.Context, /, names: tuple[str, ...], **options: Any) -> None:
    """Run the agent's evals (agent/evals/*.py) and report which cases pass."""
    try:
        code = asyncio.run(_eval(app_root_of(ctx), names, EvalCommandOptions(**options)))
    except EveError as error:
        # whatever kept the evals from running (a compile error, a bad eval file, a name no
        # eval has) is exit code 2, apart from a case that ran and failed (1)
        fail(f"{type(error).__name__}: {error}", 2)
    raise SystemExit(code)
