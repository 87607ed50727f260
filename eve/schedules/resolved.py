"""The schedules a server runs, from the compiled manifest: each entry with its ``run``
re-attached from the module map (a ``.py`` schedule's, as a tool's execute)."""

from __future__ import annotations

import inspect
from dataclasses import dataclass

from eve.authoring.schedules import ScheduleContext, ScheduleDefinition, ScheduleRun
from eve.errors import ScheduleRunFailed
from eve.manifest import ROOT_NODE_ID, ChannelDelivery, ChannelEntry, ScheduleEntry
from eve.runtime import CompiledAgent
from eve.runtime.exports import load_definition


@dataclass(frozen=True, kw_only=True)
class ResolvedSchedule:
    entry: ScheduleEntry
    #: a ``.py`` schedule's ``run(ctx)``; None for a ``.md`` one (its prompt is the message)
    run: ScheduleRun | None = None
    #: the channel a ``channel:`` delivery posts through (its declaration)
    channel: ChannelEntry | None = None

    @property
    def name(self) -> str:
        return self.entry.name

    async def message(self, context: ScheduleContext) -> str | None:
        """What this tick sends: the prompt, or what ``run(ctx)`` returns (None: skip)."""
        if self.run is None:
            return self.entry.prompt
        try:
            produced = self.run(context)
            if inspect.isawaitable(produced):
                produced = await produced
        except Exception as error:
            raise ScheduleRunFailed(
                f"schedule '{self.name}': run(ctx) raised {type(error).__name__}: {error}",
                name=self.name,
            ) from error
        if produced is not None and not isinstance(produced, str):
            raise ScheduleRunFailed(
                f"schedule '{self.name}': run(ctx) returned a {type(produced).__name__}; "
                "return the message as text, or None to skip the tick",
                name=self.name,
            )
        return produced


async def resolve_schedules(compiled: CompiledAgent) -> dict[str, ResolvedSchedule]:
    """Every schedule of ``agent/schedules/`` by name; only a ``.py`` one's module is
    imported (for its ``run``)."""
    resolved: dict[str, ResolvedSchedule] = {}
    root = compiled.manifest.nodes[ROOT_NODE_ID]
    channels = {channel.name: channel for channel in root.channels}
    for entry in root.schedules:
        run = None
        if entry.has_run:
            definition = await load_definition(
                entry,
                compiled.module_map,
                ROOT_NODE_ID,
                kind="schedule",
                definition_type=ScheduleDefinition,
            )
            run = definition.run
        channel = None
        if isinstance(entry.deliver, ChannelDelivery):
            # the compiler checked the name: a channel of this manifest
            channel = channels[entry.deliver.channel]
        resolved[entry.name] = ResolvedSchedule(entry=entry, run=run, channel=channel)
    return resolved
