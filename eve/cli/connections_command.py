"""``eve connections list [--json]``: connect to each MCP server and show its tools.

The one command that contacts servers: compiling, ``eve info`` and ``--check`` never do.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import click
import msgspec

from eve.cli.agent_setup import ensure_compiled
from eve.cli.errors import translate_errors
from eve.cli.main import app_root_of
from eve.connections.listing import ListedConnection
from eve.runtime import load_compiled_agent, resolve_agent
from eve.runtime.connections import close_pool, list_connections


class ConnectionsReport(msgspec.Struct, kw_only=True):
    """What ``--json`` prints: each node's connections with their tools or their error."""

    nodes: dict[str, list[ListedConnection]]


async def _report(app_root: Path) -> ConnectionsReport:
    loaded = load_compiled_agent(app_root)
    nodes: dict[str, list[ListedConnection]] = {}
    try:
        for node_id, node in loaded.manifest.nodes.items():
            if not node.connections:
                continue
            agent = await resolve_agent(
                loaded.manifest, loaded.module_map, node_id, app_root=app_root
            )
            nodes[node_id] = (await list_connections(agent.connections)).connections
    finally:
        await close_pool()
    return ConnectionsReport(nodes=nodes)


@click.group("connections")
def connections_command() -> None:
    """The agent's MCP connections (agent/connections/)."""


@connections_command.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the listing as JSON.")
@click.pass_context
@translate_errors
def list_command(ctx: click.Context, as_json: bool) -> None:
    """Connect to each MCP server and list its tools as the model sees them; exit 1 when
    any server could not be listed (CI can use it as a check)."""
    app_root = app_root_of(ctx)
    ensure_compiled(app_root)
    report = asyncio.run(_report(app_root))
    failed = [c for listed in report.nodes.values() for c in listed if c.error is not None]
    if as_json:
        click.echo(msgspec.json.format(msgspec.json.encode(report), indent=2))
    else:
        _print(report)
    if failed:
        click.echo(f"eve: {len(failed)} connection(s) could not be listed", err=True)
        raise SystemExit(1)


def _print(report: ConnectionsReport) -> None:
    if not report.nodes:
        click.echo("no connections (agent/connections/ is empty or absent)")
    for node_id, connections in report.nodes.items():
        for listed in connections:
            where = "" if node_id == "__root__" else f" (subagent {node_id})"
            if listed.error is not None:
                click.echo(f"connection {listed.connection}{where}: {listed.error}")
                continue
            click.echo(f"connection {listed.connection}{where}: {len(listed.tools)} tool(s)")
            for tool in listed.tools:
                params = ", ".join(tool.input_schema.get("properties", {}))
                click.echo(f"  {tool.name}({params}): {tool.description}")
