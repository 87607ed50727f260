"""Agents with schedules, and waits on what their ticks do, for the schedule tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

import httpx

from tests.polling import pauses

#: a schedule that fires every second (six fields: seconds first)
EVERY_SECOND = "* * * * * *"


class Api(Protocol):
    def get(self, path: str, **kwargs: Any) -> httpx.Response: ...


def md_schedule(*, cron: str = EVERY_SECOND, **fields: str) -> str:
    lines = "".join(f"{key}: {value}\n" for key, value in fields.items())
    return f"---\ncron: '{cron}'\n{lines}---\nSay tick.\n"


def scheduled_sessions(api: Api) -> list[dict[str, Any]]:
    """Every session a tick opened: its ``session.started`` invocation, with its id."""
    found = []
    for row in api.get("/sessions").json()["sessions"]:
        first = api.get(f"/session/{row['sessionId']}/stream?follow=false").text.split("\n")[0]
        if not first:
            continue  # made, its session.started not written yet: the next look sees it
        started = httpx.Response(200, content=first).json()
        invocation = started["data"].get("invocation")
        if invocation is not None:
            found.append({"session_id": row["sessionId"], **invocation})
    return found


def wait_until(check: Callable[[], Any], *, timeout: float = 30.0) -> Any:
    """What ``check`` returns once it is truthy (polled), or an AssertionError."""
    deadline = time.monotonic() + timeout
    for pause in pauses(0.25):  # at most every 0.25 s: a look reads every session's first event
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(pause)
    raise AssertionError("unreachable: pauses() never ends")


def last_run(api: Api) -> str | None:
    """The status of the first schedule's last run (``SUCCESS``, ``ERROR``…), if any."""
    last = api.get("/schedules").json()["schedules"][0]["last_run"]
    return None if last is None else str(last["status"])
