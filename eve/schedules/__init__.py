"""Schedules: runs of the agent on a clock (``agent/schedules/``; docs/schedules.md).

Authors import ``define_schedule`` and ``ScheduleContext`` from here. The runtime side (the
DBOS scheduled workflow, the scheduler a server starts) lives in this package's modules and
is imported only by a server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eve._lazy import lazy_attributes
from eve.authoring.schedules import ScheduleContext, ScheduleDefinition, define_schedule

if TYPE_CHECKING:
    from eve.schedules.cron import cron_problem, next_fires

__all__ = [
    "ScheduleContext",
    "ScheduleDefinition",
    "cron_problem",
    "define_schedule",
    "next_fires",
]

# croniter loads only for a caller that reads cron expressions, not for every schedule file
_LAZY = {"cron_problem": "eve.schedules.cron", "next_fires": "eve.schedules.cron"}

__getattr__ = lazy_attributes(__name__, _LAZY)
