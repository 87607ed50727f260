"""``/eve/v1/schedules``: list the agent's schedules, run one now, pause and resume one.

The scheduler starts with the service (the app's lifespan), from the compiled manifest, so
every server of the agent (``eve serve``, ``eve dev``, an embedded app) registers the same
schedules. Schedules belong to the operator: another principal sees none and reaches none
(404, as for a session it may not see).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from eve.errors import ScheduleNotFound
from eve.schedules.scheduler import Scheduler, start_scheduler
from eve.schedules.status import ScheduleStatus
from eve.server.answers import answer
from eve.server.auth import principal_of
from eve.sessions import SessionService
from eve.wire.answers import ScheduleAnswer, ScheduleQueued, Schedules

Handler = Callable[[Request], Awaitable[Response]]


def _status(status: ScheduleStatus) -> Response:
    return answer(ScheduleAnswer(schedule=msgspec.to_builtins(status)))


class ScheduleRoutes:
    def __init__(self, app_root: Path, service: SessionService) -> None:
        self.app_root = app_root
        self.service = service
        self.scheduler: Scheduler | None = None

    async def start(self) -> None:
        """Once the service (and DBOS) runs: the schedules, registered and caught up."""
        self.scheduler = await start_scheduler(self.app_root, self.service)

    def stop(self) -> None:
        if self.scheduler is not None:
            self.scheduler.stop()
            self.scheduler = None

    def _for(self, request: Request) -> Scheduler:
        name = request.path_params.get("name", "")
        if self.scheduler is None or not principal_of(request).is_operator:
            raise ScheduleNotFound(f"no schedule named '{name}'", name=name)
        return self.scheduler

    async def listing(self, request: Request) -> Response:
        if self.scheduler is None or not principal_of(request).is_operator:
            return answer(Schedules(schedules=[]))
        statuses = await self.scheduler.statuses()
        return answer(Schedules(schedules=msgspec.to_builtins(statuses)))

    async def run(self, request: Request) -> Response:
        name = request.path_params["name"]
        workflow_id = await self._for(request).run_now(name)
        return answer(ScheduleQueued(name=name, workflow_id=workflow_id), status=202)

    async def pause(self, request: Request) -> Response:
        return _status(await self._for(request).pause(request.path_params["name"]))

    async def resume(self, request: Request) -> Response:
        return _status(await self._for(request).resume(request.path_params["name"]))

    def routes(self, prefix: str, guarded: Callable[[Handler], Handler]) -> list[Route]:
        one = prefix + "/schedules/{name:path}"
        return [
            Route(prefix + "/schedules", guarded(self.listing), methods=["GET"]),
            Route(one + "/run", guarded(self.run), methods=["POST"]),
            Route(one + "/pause", guarded(self.pause), methods=["POST"]),
            Route(one + "/resume", guarded(self.resume), methods=["POST"]),
        ]
