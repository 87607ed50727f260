"""Schedule files into manifest entries: front matter or ``define_schedule`` read, cron and
time zone checked, each problem a diagnostic naming the file and the field."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from eve._frontmatter import FrontMatterError, parse_front_matter
from eve.authoring.schedules import ScheduleDefinition
from eve.channels.kinds import SENDS_FIRST
from eve.compiler.diagnostics import DiagnosticSink
from eve.manifest import (
    ROOT_NODE_ID,
    ChannelDelivery,
    ChannelEntry,
    ScheduleEntry,
    WebhookDelivery,
)
from eve.schedules.cron import cron_problem, timezone_problem

#: the front matter a ``.md`` schedule may have
FIELDS = frozenset(
    {"cron", "timezone", "catch_up", "session", "webhook_url_env", "webhook_secret_env"}
    | {"channel", "to"}
)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SESSION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$")
_BOOLEANS = {"true": True, "false": False}


@dataclass(frozen=True, kw_only=True)
class ScheduleSource:
    """Where a schedule was declared."""

    name: str
    logical_path: str
    source_id: str


@dataclass(frozen=True, kw_only=True)
class _Fields:
    cron: str
    timezone: str
    catch_up: bool
    session: str | None
    webhook_url_env: str | None
    webhook_secret_env: str | None = None
    channel: str | None = None
    to: str | None = None


class _Checker:
    def __init__(self, source: ScheduleSource, sink: DiagnosticSink, line: int | None) -> None:
        self.source = source
        self.sink = sink
        self.line = line
        self.failed = False

    def error(self, code: str, field: str, message: str) -> None:
        self.failed = True
        self.sink.error(
            code,
            f"schedule '{self.source.name}', field {field}: {message}",
            source_path=self.source.logical_path,
            line=self.line,
            node_id=ROOT_NODE_ID,
        )

    def check(self, fields: _Fields) -> None:
        if problem := cron_problem(fields.cron):
            self.error("compile/schedule-cron-invalid", "cron", problem)
        if problem := timezone_problem(fields.timezone):
            self.error("compile/schedule-timezone-invalid", "timezone", problem)
        if fields.session is not None and not _SESSION_NAME.match(fields.session):
            self.error(
                "compile/schedule-option-invalid",
                "session",
                f"{fields.session!r} must be 1 to 100 letters, digits, '_', '.', ':' or '-'",
            )
        env = fields.webhook_url_env
        if env is not None and not _ENV_NAME.match(env):
            self.error(
                "compile/schedule-option-invalid",
                "webhook_url_env",
                f"{env!r} must name the environment variable that holds the URL (e.g. "
                "DIGEST_WEBHOOK_URL); a URL often carries a token, so it is never written here",
            )
        self.check_secret(fields)
        self.check_channel(fields)

    def check_secret(self, fields: _Fields) -> None:
        """A signing secret is a variable's name, and signs a webhook's POSTs only."""
        env = fields.webhook_secret_env
        if env is None:
            return
        if not _ENV_NAME.match(env):
            self.error(
                "compile/schedule-option-invalid",
                "webhook_secret_env",
                f"{env!r} must name the environment variable that holds the signing secret "
                "(e.g. DIGEST_WEBHOOK_SECRET); a secret is never written here",
            )
        elif fields.webhook_url_env is None:
            self.error(
                "compile/schedule-option-invalid",
                "webhook_secret_env",
                "signs a webhook's POSTs: it goes with webhook_url_env",
            )

    def check_channel(self, fields: _Fields) -> None:
        """``channel`` and ``to`` go together, alone: one place an answer is delivered, and
        a thread per run (a named session's runs would share the first thread's session)."""
        if fields.channel is None and fields.to is None:
            return
        if fields.channel is None or fields.to is None:
            given, missing = ("channel", "to") if fields.to is None else ("to", "channel")
            self.error(
                "compile/schedule-option-invalid",
                missing,
                f"is missing: {given} and {missing} name a channel of agent/channels/ and the "
                "conversation it posts the answer in (channel: team, to: C0123ABC)",
            )
        elif fields.webhook_url_env is not None:
            self.error(
                "compile/schedule-option-invalid",
                "channel",
                "and webhook_url_env both deliver the answer; keep one",
            )
        elif fields.session is not None:
            self.error(
                "compile/schedule-option-invalid",
                "channel",
                "cannot go with session: each run delivered to a channel starts a thread "
                "that is its own session",
            )


def _entry(
    source: ScheduleSource,
    fields: _Fields,
    *,
    prompt: str | None = None,
    export_name: str = "default",
    factory: bool = False,
) -> ScheduleEntry:
    deliver: WebhookDelivery | ChannelDelivery | None = None
    if fields.webhook_url_env is not None:
        deliver = WebhookDelivery(
            url_env=fields.webhook_url_env, secret_env=fields.webhook_secret_env
        )
    elif fields.channel is not None and fields.to is not None:
        deliver = ChannelDelivery(channel=fields.channel, to=fields.to)
    return ScheduleEntry(
        name=source.name,
        logical_path=source.logical_path,
        source_id=source.source_id,
        cron=" ".join(fields.cron.split()),
        timezone=fields.timezone,
        catch_up=fields.catch_up,
        session=fields.session,
        deliver=deliver,
        prompt=prompt,
        has_run=prompt is None,
        export_name=export_name,
        factory=factory,
    )


def markdown_schedule(
    app_root: Path, source: ScheduleSource, sink: DiagnosticSink
) -> ScheduleEntry | None:
    """The entry of a ``.md`` schedule: its front matter's fields, its body the prompt."""
    checker = _Checker(source, sink, line=None)
    text = (app_root / source.logical_path).read_text(encoding="utf-8")
    try:
        meta, body = parse_front_matter(text)
    except FrontMatterError as error:
        checker.error(
            "compile/schedule-frontmatter-invalid",
            "front matter",
            f"{error}; a schedule starts with '---', a 'cron: …' line and '---', then the prompt",
        )
        return None
    for unknown in sorted(set(meta) - FIELDS):
        checker.error(
            "compile/schedule-option-invalid",
            unknown,
            f"is not a schedule field (the fields are {', '.join(sorted(FIELDS))})",
        )
    if "cron" not in meta:
        checker.error("compile/schedule-cron-invalid", "cron", "is missing ('cron: 0 9 * * *')")
        return None
    catch_up = _BOOLEANS.get(meta.get("catch_up", "false").lower())
    if catch_up is None:
        checker.error("compile/schedule-option-invalid", "catch_up", "must be true or false")
    if not body.strip():
        checker.error("compile/schedule-prompt-missing", "body", "the prompt (the body) is empty")
    fields = _Fields(
        cron=meta["cron"],
        timezone=meta.get("timezone", "UTC"),
        catch_up=bool(catch_up),
        session=meta.get("session") or None,
        webhook_url_env=meta.get("webhook_url_env") or None,
        webhook_secret_env=meta.get("webhook_secret_env") or None,
        channel=meta.get("channel") or None,
        to=meta.get("to") or None,
    )
    checker.check(fields)
    if checker.failed:
        return None
    return _entry(source, fields, prompt=body.strip() + "\n")


def python_schedule(
    definition: ScheduleDefinition,
    source: ScheduleSource,
    sink: DiagnosticSink,
    *,
    export_name: str,
    factory: bool,
) -> ScheduleEntry | None:
    """The entry of a ``.py`` schedule; its ``run`` is re-attached at run time."""
    checker = _Checker(source, sink, line=definition.line)
    fields = _Fields(
        cron=definition.cron,
        timezone=definition.timezone,
        catch_up=definition.catch_up,
        session=definition.session,
        webhook_url_env=definition.webhook_url_env,
        webhook_secret_env=definition.webhook_secret_env,
        channel=definition.channel,
        to=definition.to,
    )
    checker.check(fields)
    if checker.failed:
        return None
    return _entry(source, fields, export_name=export_name, factory=factory)


def check_deliveries(
    schedules: list[ScheduleEntry], channels: list[ChannelEntry], sink: DiagnosticSink
) -> None:
    """Each ``channel:`` delivery names a channel of ``agent/channels/`` whose kind can
    speak first; the others answer requests and have no one to post a run's answer to."""
    kinds = {channel.name: channel.kind for channel in channels}
    for schedule in schedules:
        if not isinstance(schedule.deliver, ChannelDelivery):
            continue
        name = schedule.deliver.channel
        kind = kinds.get(name)
        if kind is None:
            known = ", ".join(sorted(kinds)) or "none"
            problem = f"names '{name}', which is not a channel of agent/channels/ ({known})"
        elif kind not in SENDS_FIRST:
            problem = (
                f"names '{name}', a channel of kind {kind}, which answers requests and "
                f"cannot post first; deliver through a {' or '.join(sorted(SENDS_FIRST))} "
                "channel, or to a webhook (webhook_url_env)"
            )
        else:
            continue
        sink.error(
            "compile/schedule-delivery-invalid",
            f"schedule '{schedule.name}', field channel: {problem}",
            source_path=schedule.logical_path,
            node_id=ROOT_NODE_ID,
        )
