"""How a turn looks in a terminal: streamed text on stdout, tool activity on stderr."""

from __future__ import annotations

import sys
from typing import Any

import click

from eve.events import (
    ActionPartial,
    ActionResult,
    ActionsRequested,
    AuthorizationRequired,
    CompactionFailed,
    ConnectionFailed,
    MessageAppended,
    MessageCompleted,
    SessionCompacted,
    SessionEvent,
    SkillLoaded,
    TaskStarted,
    TurnCompleted,
    TurnCompletedData,
)


def _short(value: Any, limit: int = 100) -> str:
    text = value if isinstance(value, str) else str(value)
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def activity(event: SessionEvent) -> list[str]:
    """The stderr lines an event shows as (tool calls, results, tasks), without indent."""
    match event:
        case ActionsRequested(data=data):
            lines = []
            for action in data.actions:
                args = ", ".join(f"{k}={_short(v, 40)}" for k, v in action.input.items())
                lines.append(f"→ {action.name}({args})")
            return lines
        case ActionResult(data=data):
            mark = {"completed": "←", "failed": "✗", "rejected": "⊘"}[data.status]
            return [f"{mark} {data.name}: {_short(data.output)}"]
        case ActionPartial(data=data):
            return [f"… {data.name}: {_short(data.partial)}"]
        case SkillLoaded(data=data):
            return [f"✦ loaded skill {data.name}"]
        case TaskStarted(data=data):
            return [f"⇢ {data.name} started ({data.kind})"]
        case SessionCompacted(data=data):
            return [
                f"⇣ compacted {data.messages_folded} message(s): "
                f"~{data.tokens_before} → ~{data.tokens_after} tokens"
            ]
        case CompactionFailed(data=data):
            return [f"! compaction failed, trimmed instead: {_short(data.error)}"]
        case ConnectionFailed(data=data):
            # shown when the turn starts, so a later call of one of its tools that fails is
            # read in the light of the server being down
            return [
                f"! connection {data.connection} failed, its tools are missing this turn: "
                f"{_short(data.error, 300)}"
            ]
        case AuthorizationRequired(data=data):
            # the whole URL, never shortened: the person opens it to sign in
            return [
                f"🔑 connection {data.connection} needs you to sign in; open this link "
                f"(waiting {data.timeout_seconds:g}s):",
                f"   {data.url}",
            ]
    return []


#: ``--debug`` of ``eve run`` and ``eve dev`` (or ``EVE_DEBUG=1``)
debug_option = click.option(
    "--debug",
    is_flag=True,
    envvar="EVE_DEBUG",
    help="Print a failing tool's traceback under its result (also EVE_DEBUG=1).",
)


def footer(data: TurnCompletedData) -> str:
    """The line under a turn in ``eve dev``: its tokens by kind, its cost and the session's.

    ``tokens 1,200 in · 3,000 cache read · 80 out (12 reasoning) · turn $0.0042 · session
    $0.0169``; a kind that is 0 is left out, and an unpriced model reads "price unknown"."""
    usage = data.usage
    kinds = [
        (usage.input_tokens, "in"),
        (usage.cache_read_tokens, "cache read"),
        (usage.cache_write_tokens, "cache write"),
    ]
    parts = [f"{count:,} {label}" for count, label in kinds if count]
    out = f"{usage.output_tokens:,} out"
    parts.append(f"{out} ({usage.reasoning_tokens:,} reasoning)" if usage.reasoning_tokens else out)
    line = "tokens " + " · ".join(parts)
    if data.cost is not None:
        line += f" · turn {data.cost.describe()}"
    if data.session is not None:
        line += f" · session {data.session.cost.describe()}"
    return line


class ConsoleRenderer:
    """An event sink; ``stream_text`` prints deltas as they arrive (``eve dev``).

    A subagent's events (they carry ``parent``) are shown on stderr under its path: its
    text is what it tells its caller, not the answer."""

    def __init__(self, *, stream_text: bool, footer: bool = False, debug: bool = False) -> None:
        self.stream_text = stream_text
        #: a line of tokens and cost under each turn (``eve dev``)
        self.footer = footer
        #: a failing tool's traceback under its result (``--debug``)
        self.debug = debug
        self.mid_line = False

    def __call__(self, event: SessionEvent) -> None:
        delegated = event.data.parent is not None
        if isinstance(event, MessageAppended) and self.stream_text and not delegated:
            sys.stdout.write(event.data.message_delta)
            sys.stdout.flush()
            self.mid_line = True
            return
        lines = activity(event)
        if self.footer and not delegated and isinstance(event, TurnCompleted):
            lines = [footer(event.data)]
        if delegated and isinstance(event, MessageCompleted):
            lines = [f"says: {_short(event.data.message, 200)}"]
        if self.debug and isinstance(event, ActionResult) and event.data.traceback:
            lines = [*lines, *("  " + line for line in event.data.traceback.splitlines())]
        if not lines:
            return
        self.end_line()
        prefix = f"  [{event.data.node_id or 'subagent'}] " if delegated else "  "
        for line in lines:
            click.echo(prefix + line, err=True)

    def end_line(self) -> None:
        if self.mid_line:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self.mid_line = False
