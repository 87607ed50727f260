"""Counts this session's turns in durable state: started when a turn begins, completed when
it ends well. The counts survive restarts with the session's checkpoints."""

from typing import Any

from agent.lib.turns import bump
from eve.hooks import define_hook


def on_turn_started(event: Any) -> None:
    bump("started")


def on_turn_completed(event: Any) -> None:
    bump("completed")


default = define_hook(events={"turn.started": on_turn_started, "turn.completed": on_turn_completed})
