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
import time
from datetime import datetime
from http.client import HTTPException
from typing import Any

import msgspec
from sqlalchemy.engine import Connection

from eve.auth.principal import OPERATOR, Principal
from eve.channels import conversation_keys
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

        client = self.client()  # first: no token, no look at the session or Slack
        if (posted := await self.posted_before()) is not None:
            return posted
        try:
            team = await asyncio.to_thread(client.auth_test)
            # an earlier try whose post Slack took, but whose answer never reached
            # ``record`` (lost on the way, or the worker died): that message is the run's
            found = await asyncio.to_thread(self.posted_unrecorded, client)
            conversation, ts = found or await self.post(client)
        except SlackApiError as error:
            # Slack's error code (channel_not_found, invalid_auth…) says what; the token
            # is in neither it nor the status
            code = error.response.get("error", "no error code")
            raise self.failed(f"Slack answered {code}", error.response.status_code) from None
        except (OSError, HTTPException) as error:
            # unreachable, or the answer lost on the way: the step's next try reads the
            # conversation back before it posts (``posted_unrecorded``)
            raise self.failed(f"Slack could not be reached ({type(error).__name__})") from None
        await self.record(str(team["team_id"]), conversation, ts)
        return ts

    async def post(self, client: Any) -> tuple[str, str]:
        """Post the run's message: its conversation and ts."""
        from eve.channels.slack_delivery import reply_metadata

        text, covers = await self.text()
        last = covers[-1] if covers else 0
        sent = await asyncio.to_thread(
            client.chat_postMessage,
            channel=self.delivery.to,
            text=text,
            metadata=reply_metadata(
                self.outcome.session_id, last, covers, turn=self.outcome.turn_id
            ),
        )
        return str(sent.get("channel") or self.delivery.to), str(sent["ts"])

    def posted_unrecorded(self, client: Any) -> tuple[str, str] | None:
        """The run's message if Slack has it (``run_message``): its conversation and ts."""
        from slack_sdk.errors import SlackApiError

        from eve.channels.slack_delivery import run_message

        try:
            ts = run_message(
                client,
                conversation=self.delivery.to,
                session_id=self.outcome.session_id,
                turn_id=self.outcome.turn_id,
                since=_epoch(self.outcome.tick),
            )
        except SlackApiError as error:
            if error.response.get("error") != "channel_not_found":
                raise
            # not a conversation whose history can be read (a user id, whose DM the post
            # opens), or none at all: the post says which
            return None
        return None if ts is None else (self.delivery.to, ts)

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
        session_id = self.outcome.session_id
        found = await asyncio.to_thread(
            self.service.store.run,
            lambda c: conversation_keys.key_of(c, self.principal, prefix, session_id),
        )
        return None if found is None else found.rsplit(":", 1)[-1]

    async def record(self, team: str, conversation: str, ts: str) -> None:
        """The thread is the run's session: the slack kind finds it by the thread's key,
        which also opens the run's session as an Idempotency-Key (what an eve from before
        ``eve_conversation_keys`` looked up)."""
        from eve.channels.kinds.slack import thread_key

        thread = thread_key(self.name, team, conversation, ts)
        key = idempotency.key_for(
            idempotency.CREATE_ROUTE,
            thread,
            None,  # what a thread's event opens its session with: no message
            principal=self.principal,
        )
        answer = Accepted(session_id=self.outcome.session_id, turn_id=None).answer()
        session_id, now = self.outcome.session_id, time.time()

        def both(c: Connection) -> None:
            idempotency.record(c, key, answer)
            conversation_keys.remember(c, self.principal, thread, session_id, now)

        await asyncio.to_thread(self.service.store.run, both)


def _epoch(tick: str) -> float | None:
    """The tick (an ISO time) in Unix seconds: the run's message was posted after it."""
    try:
        return datetime.fromisoformat(tick).timestamp()
    except ValueError:
        return None
