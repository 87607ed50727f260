"""How a turn looks in a terminal: streamed text on stdout, tool activity on stderr."""

from __future__ import annotations

import sys
from typing import Any

import click

from eve.events import (
    ActionPartial,
    ActionResult,
    ActionsRequested,
    CompactionFailed,
    MessageAppended,
    MessageCompleted,
    SessionCompacted,
    SessionEvent,
    SkillLoaded,
    TaskStarted,
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
    return []


class ConsoleRenderer:
    """An event sink; ``stream_text`` prints deltas as they arrive (``eve dev``).

    A subagent's events (they carry ``parent``) are shown on stderr under its path: its
    text is what it tells its caller, not the answer."""

    def __init__(self, *, stream_text: bool) -> None:
        self.stream_text = stream_text
        self.mid_line = False

    def __call__(self, event: SessionEvent) -> None:
        delegated = event.data.parent is not None
        if isinstance(event, MessageAppended) and self.stream_text and not delegated:
            sys.stdout.write(event.data.message_delta)
            sys.stdout.flush()
            self.mid_line = True
            return
        lines = activity(event)
        if delegated and isinstance(event, MessageCompleted):
            lines = [f"says: {_short(event.data.message, 200)}"]
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
