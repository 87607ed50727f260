"""A scheduled run's answer posted through a channel of ``agent/channels/``.

Only a kind that can speak first can take one: most channels are doors requests come in by
(``ai_sdk``, ``ag_ui``, ``a2a``, ``mcp``, ``openai`` answer a request, and have no one to
tell before one comes), so the compiler refuses a delivery to them. Slack can: the answer
is a new message in the conversation the schedule names, and that message's thread is the
run's session, recorded under the key the slack kind opens a thread's session under, so a
reply in the thread is the session's next turn as in any thread the bot answered.

The kind's package (slack_sdk) is imported only when such a delivery runs.
"""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec

from eve.auth.principal import OPERATOR, Principal
from eve.channels.kinds import SENDS_FIRST
from eve.channels.sessions import ChannelSessions
from eve.errors import ScheduleDeliveryFailed, ServerConfigError
from eve.manifest import ChannelDelivery, ChannelEntry
from eve.schedules.delivery import RunOutcome
from eve.sessions import Accepted, SessionService, idempotency


def session_owner(channel: ChannelEntry | None) -> Principal:
    """Who owns a run's session: the channel it is delivered to, so the people there can
    carry on with it; the operator where it goes nowhere or to a webhook."""
    if channel is not None and channel.kind == "slack":
        from eve.channels.kinds.slack import channel_principal

        return channel_principal(channel.name)
    return OPERATOR


async def deliver_to_channel(
    service: SessionService, channel: ChannelEntry, delivery: ChannelDelivery, outcome: RunOutcome
) -> str:
    """Post ``outcome`` as a new message of ``delivery.to``; the message's id (its ts).

    Raises ``ScheduleDeliveryFailed`` for a missing token or a refusal (the durable step
    that calls this retries it); a run whose message was posted already is not posted
    again (a retried or replayed step), it finds the thread it recorded."""
    if channel.kind not in SENDS_FIRST:  # the compiler refuses these
        raise ScheduleDeliveryFailed(
            f"schedule '{outcome.name}': the {channel.kind} channel '{channel.name}' cannot "
            "speak first; deliver to a slack channel or a webhook",
            name=outcome.name,
            status=None,
        )
    return await _SlackPost(service, channel, delivery, outcome).run()


class _SlackPost:
    def __init__(
        self,
        service: SessionService,
        channel: ChannelEntry,
        delivery: ChannelDelivery,
        outcome: RunOutcome,
    ) -> None:
        from eve.channels.kinds.slack import Options, channel_principal

        self.outcome = outcome
        self.delivery = delivery
        self.name = channel.name
        self.options = msgspec.convert(channel.options, Options)
        self.principal = channel_principal(channel.name)
        self.sessions = ChannelSessions(service, self.principal)
        self.service = service

    def failed(self, why: str, status: int | None = None) -> ScheduleDeliveryFailed:
        return ScheduleDeliveryFailed(
            f"schedule '{self.outcome.name}': the slack channel '{self.name}' could not post "
            f"to {self.delivery.to}: {why}",
            name=self.outcome.name,
            status=status,
        )

    async def run(self) -> str:
        from slack_sdk.errors import SlackApiError

        from eve.channels.slack_delivery import reply_metadata

        client = self.client()  # first: no token, no look at the session or Slack
        if (posted := await self.posted_before()) is not None:
            return posted
        try:
            team = await asyncio.to_thread(client.auth_test)
            text, covers = await self.text()
            sent = await asyncio.to_thread(
                client.chat_postMessage,
                channel=self.delivery.to,
                text=text,
                metadata=reply_metadata(
                    self.outcome.session_id, covers[-1] if covers else 0, covers
                ),
            )
        except SlackApiError as error:
            # Slack's error code (channel_not_found, invalid_auth…) says what; the token
            # is in neither it nor the status
            code = error.response.get("error", "no error code")
            raise self.failed(f"Slack answered {code}", error.response.status_code) from None
        except OSError as error:
            raise self.failed(f"Slack could not be reached ({type(error).__name__})") from None
        ts = str(sent["ts"])
        await self.record(str(team["team_id"]), str(sent.get("channel") or self.delivery.to), ts)
        return ts

    def client(self) -> Any:
        from eve.channels.slack_delivery import Courier

        courier = Courier(
            api_url=self.options.api_url,
            token_env=self.options.bot_token_env,
            sessions=lambda: self.sessions,
        )
        try:
            return courier.client()
        except ServerConfigError:
            raise self.failed(
                f"${self.options.bot_token_env} is not set; set it to the bot token"
            ) from None

    async def text(self) -> tuple[str, list[int]]:
        """The message (the run's answer, and how its turn ended) and the log indexes of
        its turn's stops: the thread has them all, so the channel's courier, which posts
        what a thread lacks, never posts them again."""
        from eve.channels.slack_delivery import reply_text
        from eve.channels.turn_log import Reply, log_replies

        stops = [
            r
            for r in await log_replies(self.sessions, self.outcome.session_id)
            if r.turn_id == self.outcome.turn_id
        ]
        covers = [r.end.index for r in stops]
        if not stops:  # the outcome was read from this log: not reached, but say something
            return self.outcome.text or f"({self.outcome.status})", covers
        said = reply_text(
            Reply(turn_id=self.outcome.turn_id, text=self.outcome.text, end=stops[-1].end)
        )
        return said or f"Schedule '{self.outcome.name}' ran and said nothing.", covers

    async def posted_before(self) -> str | None:
        """The ts of this run's message when an earlier try posted it and recorded it."""
        prefix = f"slack:{self.name}:"
        for key, session_id in (await self.sessions.opened_under(prefix)).items():
            if session_id == self.outcome.session_id:
                return key.rsplit(":", 1)[-1]
        return None

    async def record(self, team: str, conversation: str, ts: str) -> None:
        """The thread's key now opens the run's session: the slack kind finds it there."""
        from eve.channels.kinds.slack import thread_key

        key = idempotency.key_for(
            idempotency.CREATE_ROUTE,
            thread_key(self.name, team, conversation, ts),
            None,  # what a thread's event opens its session with: no message
            principal=self.principal,
        )
        answer = Accepted(session_id=self.outcome.session_id, turn_id=None).answer()
        await asyncio.to_thread(
            self.service.store.run, lambda c: idempotency.record(c, key, answer)
        )
