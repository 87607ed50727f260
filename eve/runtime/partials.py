"""Where the running tool call publishes its progress, for code that is not a generator.

A generator tool's yields are its ``action.partial`` events; a tool that learns of its
progress by callback (an MCP server's ``notifications/progress``) reaches the same events
through this context variable, which the tool runner sets for each call it runs (each call
runs in a task of its own or after the previous one's, so the value is that call's).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

Report = Callable[[Any], Awaitable[None]]

running_call_partial: ContextVar[Report | None] = ContextVar("running_call_partial", default=None)
