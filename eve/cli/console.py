"""How a turn looks in a terminal: streamed text on stdout, tool activity on stderr."""

from __future__ import annotations

import sys
from typing import Any

import click

from eve.events import SessionEvent


def _short(value: Any, limit: int = 100) -> str:
    text = value if isinstance(value, str) else str(value)
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def activity(event: SessionEvent) -> list[str]:
    """The stderr lines an event shows as (tool calls, results, tasks), without indent."""
    data = event.data
    if event.type == "actions.requested":
        lines = []
        for action in data["actions"]:
            args = ", ".join(f"{k}={_short(v, 40)}" for k, v in action["input"].items())
            lines.append(f"→ {action['name']}({args})")
        return lines
    if event.type == "action.result":
        mark = {"completed": "←", "failed": "✗", "rejected": "⊘"}[data["status"]]
        return [f"{mark} {data['name']}: {_short(data['output'])}"]
    if event.type == "action.partial":
        return [f"… {data['name']}: {_short(data['partial'])}"]
    if event.type == "skill.loaded":
        return [f"✦ loaded skill {data['name']}"]
    if event.type == "task.started":
        return [f"⇢ {data['name']} started ({data['kind']})"]
    return []


class ConsoleRenderer:
    """An event sink; ``stream_text`` prints deltas as they arrive (``eve dev``).

    A subagent's events (they carry ``parent``) are shown on stderr under its path: its
    text is what it tells its caller, not the answer."""

    def __init__(self, *, stream_text: bool) -> None:
        self.stream_text = stream_text
        self.mid_line = False

    def __call__(self, event: SessionEvent) -> None:
        data = event.data
        delegated = "parent" in data
        if event.type == "message.appended" and self.stream_text and not delegated:
            sys.stdout.write(data["message_delta"])
            sys.stdout.flush()
            self.mid_line = True
            return
        lines = activity(event)
        if delegated and event.type == "message.completed":
            lines = [f"says: {_short(data['message'], 200)}"]
        if not lines:
            return
        self.end_line()
        prefix = f"  [{data.get('node_id', 'subagent')}] " if delegated else "  "
        for line in lines:
            click.echo(prefix + line, err=True)

    def end_line(self) -> None:
        if self.mid_line:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self.mid_line = False
