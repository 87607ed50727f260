"""Schedules: runs of the agent on a clock (``agent/schedules/``; docs/schedules.md).

Authors import ``define_schedule`` and ``ScheduleContext`` from here. The runtime side (the
DBOS scheduled workflow, the scheduler a server starts) lives in this package's modules and
is imported only by a server.
"""

from __future__ import annotations

from eve.authoring.schedules import ScheduleContext, ScheduleDefinition, define_schedule

__all__ = ["ScheduleContext", "ScheduleDefinition", "define_schedule"]
