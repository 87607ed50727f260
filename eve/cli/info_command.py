"""``eve info [--json]``: what the compiled agent holds, read from the artifacts only."""

from __future__ import annotations

import click
import msgspec

from eve.cli.errors import translate_errors
from eve.cli.main import app_root_of
from eve.runtime.info import NodeInfo, agent_info

#: the built-ins that run commands: a node with one and no sandbox is flagged
RUNS_COMMANDS = frozenset({"eve:builtins/bash", "eve:builtins/run_python"})
#: what ``eve info`` says of a model eve knows no window for
UNKNOWN_WINDOW = (
    "unknown (compaction cannot measure it, output is not bounded by it): set "
    "define_agent(model_context_window_tokens=...) to the window the model has"
)


def _print_node(node: NodeInfo, indent: str) -> None:
    label = "agent" if not node.path else f"subagent {node.path}"
    click.echo(f"{indent}{label}: model {node.model or '(none: offline/test)'}")
    if node.fallback:
        click.echo(f"{indent}  fallback: {', '.join(node.fallback)}")
    window = node.context_window
    if window is not None:
        output = f", {window.max_output_tokens} output" if window.max_output_tokens else ""
        click.echo(f"{indent}  context window: {window.tokens} tokens{output} ({window.source})")
    elif node.model is not None:
        click.echo(f"{indent}  context window: {UNKNOWN_WINDOW}")
    if node.description:
        click.echo(f"{indent}  description: {node.description}")
    _print_turn_inputs(node, indent)
    if node.output_schema is not None:
        fields = ", ".join(node.output_schema.get("properties", {}))
        title = node.output_schema.get("title", "an object")
        click.echo(f"{indent}  output: {title}({fields})")
    for tool in node.tools:
        extra = [tool.handling] if tool.handling != "dispatch" else []
        extra += [f"from {tool.source}"] if tool.source.startswith("plugin:") else []
        extra += [f"approval {tool.approval}"] if tool.approval != "never" else []
        extra += ["deferred"] if tool.deferred else []
        if tool.inherited_from is not None:
            extra += [f"from {tool.inherited_from or 'the root'}"]
        suffix = f" ({', '.join(extra)})" if extra else ""
        params = ", ".join((tool.input_schema or {}).get("properties", {}))
        click.echo(f"{indent}  tool {tool.name}({params}){suffix}")
    for skill in node.skills:
        click.echo(f"{indent}  skill {skill.name}: {skill.description}")
    for hook in node.hooks:
        click.echo(f"{indent}  hook {hook.name}: {', '.join(hook.events)}")
    for slot in node.memory:
        click.echo(
            f"{indent}  memory {slot.name} ({slot.scope}, {slot.provider}, {slot.search} search"
            + (f", recall {slot.recall}" if slot.recall else "")
            + f", {slot.expose}): {slot.description or slot.source}"
        )
    for connection in node.connections:
        click.echo(
            f"{indent}  connection {connection.name} ({connection.transport} "
            f"{connection.target}, {connection.expose}): {connection.description}"
        )
    _print_sandbox(node, indent)


def _print_sandbox(node: NodeInfo, indent: str) -> None:
    box = node.sandbox
    if box is None:
        if any(tool.source in RUNS_COMMANDS for tool in node.tools):
            click.echo(
                f"{indent}  sandbox: none declared: commands run unconfined, as eve does "
                "(UNSAFE; add agent/sandbox.py, docs/sandbox.md)"
            )
        return
    network = "shared network" if box.network else "no network"
    hosts = f" (allow_hosts {', '.join(box.allow_hosts)}: not filtered)" if box.allow_hosts else ""
    unsafe = " UNSAFE: no isolation," if box.unsafe else ""
    click.echo(
        f"{indent}  sandbox {box.provider} ({box.source}):{unsafe} {network}{hosts}, "
        f"{box.workspace_files} seed file(s), limits "
        + ", ".join(f"{name} {value}" for name, value in box.limits.items())
    )


def _print_turn_inputs(node: NodeInfo, indent: str) -> None:
    """The node's prompt files and its deps factory: what each turn starts from."""
    prompt = [p for p in (node.instructions_path, node.dynamic_instructions_path) if p]
    if prompt:
        dynamic = " (evaluated each turn)" if node.dynamic_instructions_path else ""
        click.echo(f"{indent}  instructions: {' + '.join(prompt)}{dynamic}")
    if node.deps is not None:
        owner = node.deps.inherited_from
        whose = "" if owner is None else f", inherited from {owner or 'the root'}"
        click.echo(f"{indent}  deps: the factory of {node.deps.source}{whose}")


@click.command("info")
@click.option("--json", "as_json", is_flag=True, help="Print the stable JSON document.")
@click.pass_context
@translate_errors
def info_command(ctx: click.Context, as_json: bool) -> None:
    """Show the compiled agent: status, model, tools, skills, hooks, subagents."""
    info = agent_info(app_root_of(ctx))
    if as_json:
        click.echo(msgspec.json.format(msgspec.json.encode(info), indent=2))
        return
    click.echo(
        f"status: {info.status} ({info.diagnostics.errors} error(s), "
        f"{info.diagnostics.warnings} warning(s))"
    )
    for path in info.stale_sources:
        click.echo(f"  stale: {path}")
    _print_node(info.agent, "")
    for node in info.subagents:
        _print_node(node, "  ")
    for channel in info.channels:
        click.echo(f"channel {channel.name} ({channel.kind}): {channel.method} {channel.url_path}")
    for schedule in info.schedules:
        click.echo(f"schedule {schedule.name}: {schedule.cron} ({schedule.timezone})")
    if info.auth is not None:
        click.echo(f"auth: {info.auth.source} (define_auth, {info.auth.export_name})")
    click.echo(f"artifacts: {info.artifacts['manifest']}, {info.artifacts['module_map']}")
