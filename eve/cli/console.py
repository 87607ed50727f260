"""How a turn looks in a terminal: streamed text on stdout, tool activity on stderr."""

from __future__ import annotations

import sys
from typing import Any

import click

from eve.execution.events import SessionEvent


def _short(value: Any, limit: int = 100) -> str:
    text = value if isinstance(value, str) else str(value)
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ConsoleRenderer:
    """An event sink; ``stream_text`` prints deltas as they arrive (``eve dev``)."""

    def __init__(self, *, stream_text: bool) -> None:
        self.stream_text = stream_text
        self.mid_line = False

    def __call__(self, event: SessionEvent) -> None:
        data = event.data
        if event.type == "message.appended" and self.stream_text:
            sys.stdout.write(data["message_delta"])
            sys.stdout.flush()
            self.mid_line = True
        elif event.type == "actions.requested":
            self.end_line()
            for action in data["actions"]:
                args = ", ".join(f"{k}={_short(v, 40)}" for k, v in action["input"].items())
                click.echo(f"  → {action['name']}({args})", err=True)
        elif event.type == "action.result":
            mark = {"completed": "←", "failed": "✗", "rejected": "⊘"}[data["status"]]
            click.echo(f"  {mark} {data['name']}: {_short(data['output'])}", err=True)
        elif event.type == "action.partial":
            click.echo(f"  … {data['name']}: {_short(data['partial'])}", err=True)
        elif event.type == "skill.loaded":
            click.echo(f"  ✦ loaded skill {data['name']}", err=True)

    def end_line(self) -> None:
        if self.mid_line:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self.mid_line = False
