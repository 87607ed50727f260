"""Schedule definitions: what ``agent/schedules/<name>.py`` declares, a run on a clock.

``define_schedule(cron=..., run=...)`` is the Python form of a ``schedules/<name>.md`` file:
its ``run(ctx)`` decides at each tick what the agent is sent (the text of the turn), or
returns None to skip that tick. The cron and time zone are checked when the schedule is
defined and again by the compiler, which writes them into the manifest; ``run`` is
re-attached at run time from the module map, like a tool's execute.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

from eve.authoring._caller import caller_module
from eve.errors import AuthoringError


@dataclass(frozen=True, kw_only=True)
class ScheduleContext:
    """What a ``run(ctx)`` is told about the tick it runs for."""

    #: the schedule's name (``reports/daily``)
    name: str
    #: the time the tick was due, in the schedule's time zone
    tick: datetime
    #: True for a run someone asked for (``eve schedules run``, the HTTP route, the dev UI)
    manual: bool = False


#: ``run(ctx) -> str | None``, sync or async: the message of this tick's turn, or None
ScheduleRun = Callable[[ScheduleContext], "str | Awaitable[str | None] | None"]


@dataclass(frozen=True, kw_only=True)
class ScheduleDefinition:
    """A schedule as authored. Its path under ``schedules/`` (without ``.py``) is its name."""

    cron: str
    run: ScheduleRun
    timezone: str = "UTC"
    catch_up: bool = False
    #: the name of the long-lived session every run is a turn of; None: a new session a run
    session: str | None = None
    #: the environment variable that holds the URL the run's answer is posted to
    webhook_url_env: str | None = None
    #: the environment variable that holds the secret (``whsec_…``) the webhook's POSTs are
    #: signed with (Standard Webhooks)
    webhook_secret_env: str | None = None
    #: the channel of ``agent/channels/`` the run's answer is posted through (slack)
    channel: str | None = None
    #: the conversation that channel posts it in (a Slack channel id)
    to: str | None = None
    #: the line of the ``define_schedule`` call, for diagnostics
    line: int | None = None
    #: the module whose code made this definition (see the export rule)
    defined_in: str | None = None


def define_schedule(
    *,
    cron: str,
    run: ScheduleRun,
    timezone: str = "UTC",
    catch_up: bool = False,
    session: str | None = None,
    webhook_url_env: str | None = None,
    channel: str | None = None,
    to: str | None = None,
    webhook_secret_env: str | None = None,
) -> ScheduleDefinition:
    """A run of the agent on a clock; see docs/schedules.md.

    Args:
        cron: five fields (``"0 9 * * 1-5"``) or six with seconds first.
        run: called at each tick with a ``ScheduleContext``; returns the message to send,
            or None to skip the tick.
        timezone: the IANA zone the cron's fields are read in (``"Europe/Paris"``).
        catch_up: a tick missed while no worker ran: run the latest one once (True) or
            skip it (False).
        session: run every tick as a turn of one long-lived session of this name.
        webhook_url_env: the variable holding a URL the answer is POSTed to once the turn
            ends.
        channel: the name of a channel of ``agent/channels/`` whose kind can speak first
            (``slack``) that posts the answer once the turn ends, as a new message of ``to``.
        to: the conversation it is posted in (a Slack channel id, ``C0123ABC``).
        webhook_secret_env: the variable holding the secret (``whsec_…``) each POST to the
            webhook is signed with, as Standard Webhooks signs (docs/schedules.md).
    """
    if not callable(run):
        raise AuthoringError(
            f"define_schedule: run={run!r} must be a function run(ctx) that returns the "
            "message to send, or None to skip the tick"
        )
    for name, value in (("cron", cron), ("timezone", timezone)):
        if not isinstance(value, str) or not value.strip():
            raise AuthoringError(f"define_schedule: {name}= must be a non-empty string")
    return ScheduleDefinition(
        cron=cron,
        run=run,
        timezone=timezone,
        catch_up=catch_up,
        session=session,
        webhook_url_env=webhook_url_env,
        webhook_secret_env=webhook_secret_env,
        channel=channel,
        to=to,
        line=sys._getframe(1).f_lineno,
        defined_in=caller_module(),
    )
