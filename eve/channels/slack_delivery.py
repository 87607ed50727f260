"""Posting a Slack thread's replies: each stop of each turn, once, derived from the log.

A reply belongs to a log index (the turn's end, or its wait on a person) and is posted with
``chat.postMessage`` in the thread, carrying that index in its message metadata. Delivering
a thread reads the session's log and the thread's replies (``conversations.replies``) and
posts what the log has and the thread lacks, in order: so a delivery repeated (a Slack
retry, a restart, an answer lost after Slack took the post) doubles nothing, and one cut
short loses nothing, because the next delivery of the thread posts the rest. What a thread
has is read from Slack alone; two workers take turns at it through a lease on the thread's
row (``conversation_keys.take_lease``), so neither reads it back while the other posts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from http.client import HTTPException
from typing import Any, assert_never

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler
from sqlalchemy.engine import Connection

from eve.channels.conversation_keys import drop_lease, take_lease
from eve.channels.sessions import ChannelSessions
from eve.channels.turn_log import Ended, Reply, log_replies, prompt, turn_pieces
from eve.errors import ServerConfigError
from eve.events import MessageReceived, decode_event

log = logging.getLogger("eve.channels.slack")

#: the metadata event type of eve's replies (https://api.slack.com/metadata/using)
REPLY_EVENT = "eve_reply"
#: how long before a run's tick its message is looked for in the conversation's history
HISTORY_MARGIN_SECONDS = 60
#: how much of a conversation's history a scheduled run's delivery reads back for its
#: message (``run_message``): the messages since the run's tick, newest first
HISTORY_PAGE_SIZE = 200
HISTORY_PAGES = 10
#: how many times one delivery of a thread is tried, and the wait before the second try
#: (doubling after it)
DELIVERY_TRIES = 3
RETRY_DELAY_SECONDS = 0.5
#: how long one worker holds a thread's delivery at most (its tries, 429 waits included)
LEASE_SECONDS = 60.0
#: how often a worker waiting on another's lease looks again
LEASE_POLL_SECONDS = 0.1
#: a session's first message names who started its thread: ``<@U123>: text``
_SPEAKER = re.compile(r"^<@([A-Z0-9]+)>: ")


@dataclass(frozen=True, kw_only=True)
class Thread:
    """A Slack thread and the eve session it is."""

    team: str
    channel: str
    ts: str
    session_id: str


def speaker_line(user: str, text: str) -> str:
    """A Slack message as the agent gets it: who says it, then what."""
    return f"<@{user}>: {text}"


def env_secret(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise ServerConfigError(
            f"the slack channel reads its secret from ${name}, which is not set; set it to "
            "the value from your Slack app's settings"
        )
    return value


def _blocks(reply: Reply, thread: Thread) -> list[dict[str, Any]]:
    """Each request the turn waits on, as a section and one button per answer; a button's
    value names the session, request and option. Who may press it is not in it: the
    session service checks the presser against the request's asker."""
    blocks: list[dict[str, Any]] = []
    if reply.text:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": reply.text}})
    for request in reply.end.requests:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": prompt(request)}})
        buttons = [
            {
                "type": "button",
                "action_id": f"eve_answer_{option.id}",
                "text": {"type": "plain_text", "text": option.label},
                "value": json.dumps(
                    {"s": thread.session_id, "r": request.request_id, "o": option.id}
                ),
            }
            for option in request.options
        ]
        blocks.append({"type": "actions", "block_id": request.request_id, "elements": buttons})
    return blocks


def reply_metadata(
    session_id: str, index: int, covers: list[int] | None = None, *, turn: str | None = None
) -> dict[str, Any]:
    """The metadata a posted reply carries: whose log index it answers, and for a scheduled
    run's message its turn and every stop of that turn it stands for (``covers``), so the
    courier, which posts what a thread lacks (``_posted``), never posts them again, and a
    try of the run's delivery finds the message an earlier try posted (``run_message``)."""
    payload: dict[str, Any] = {"session": session_id, "index": index}
    if covers is not None:
        payload["covers"] = covers
    if turn is not None:
        payload["turn"] = turn
    return {"event_type": REPLY_EVENT, "event_payload": payload}


def _reply_of(message: dict[str, Any], session_id: str) -> dict[str, Any] | None:
    """The metadata payload of ``message`` when it is eve's reply for ``session_id``."""
    metadata = message.get("metadata") or {}
    payload: dict[str, Any] = metadata.get("event_payload") or {}
    ours = metadata.get("event_type") == REPLY_EVENT and payload.get("session") == session_id
    return payload if ours else None


def thread_session(client: WebClient, channel: str, ts: str) -> str | None:
    """The session a thread's first message names, when this bot posted it (a scheduled
    run's message, whose thread is the run's session). Another app's message naming a
    session is not believed: the thread would be given that session's replies."""
    bot = client.auth_test().get("bot_id")
    page = client.conversations_replies(channel=channel, ts=ts, include_all_metadata=True, limit=1)
    messages: list[dict[str, Any]] = page.get("messages", [])
    parent = messages[0] if messages else {}
    metadata = parent.get("metadata") or {}
    ours = bot and parent.get("bot_id") == bot and metadata.get("event_type") == REPLY_EVENT
    if parent.get("ts") != ts or not ours:
        return None
    session_id = (metadata.get("event_payload") or {}).get("session")
    return session_id if isinstance(session_id, str) else None


def run_message(
    client: WebClient, *, conversation: str, session_id: str, turn_id: str, since: float | None
) -> str | None:
    """The ts of the message that starts a scheduled run's thread, when Slack has it: read
    back from the conversation's history since the run's tick (``conversations.history``
    with its metadata), at most ``HISTORY_PAGES`` pages, newest first."""
    # a message's ts is Slack's clock, and its fraction a sequence within the second, not
    # microseconds ("1355517523.000005"): a message posted in the tick's own second can have
    # a ts below the tick's exact time, and the two clocks differ. So the read starts a
    # margin before the tick, in whole seconds.
    oldest = None if since is None else str(math.floor(since) - HISTORY_MARGIN_SECONDS)
    cursor = None
    for _ in range(HISTORY_PAGES):
        page = client.conversations_history(
            channel=conversation,
            oldest=oldest,
            include_all_metadata=True,
            limit=HISTORY_PAGE_SIZE,
            cursor=cursor,
        )
        messages: list[dict[str, Any]] = page.get("messages", [])
        for message in messages:
            payload = _reply_of(message, session_id)
            if payload is not None and payload.get("turn") == turn_id:
                return str(message["ts"])
        cursor = (page.get("response_metadata") or {}).get("next_cursor")
        if not cursor:
            return None
    return None


def reply_text(reply: Reply) -> str:
    """What a reply says as plain text: the turn's words, and how it ended."""
    end: Ended = reply.end
    match end.status:
        case "completed":
            return reply.text
        case "failed":
            return f"{reply.text}\n\nThe turn failed: {end.error}".strip()
        case "cancelled":
            return f"{reply.text}\n\n(cancelled)".strip()
        case "waiting":
            return "\n\n".join([reply.text, *(prompt(r) for r in end.requests)]).strip()
        case _:
            assert_never(end.status)


def _failure(error: Exception) -> str | None:
    """What went wrong, when a later try may do better: an answer lost on the way (the
    connection dropped, the read broke off) or Slack's own trouble (HTTP 5xx); None for a
    refusal, which another try would only repeat."""
    if isinstance(error, SlackApiError):
        status = error.response.status_code
        return f"Slack answered HTTP {status}" if status >= 500 else None
    return f"the answer was lost ({type(error).__name__})"


def _refusal(error: Exception) -> str:
    if isinstance(error, SlackApiError):
        return str(error.response.get("error", error.response.status_code))
    return type(error).__name__


class Courier:
    """Delivers threads' replies through the Web API at ``api_url`` with the bot token in
    ``token_env``; at most one delivery per thread at a time in this process and, where
    ``key_of`` names a thread's key, across workers (a lease on its row of
    ``eve_conversation_keys``)."""

    def __init__(
        self,
        *,
        api_url: str,
        token_env: str,
        sessions: Callable[[], ChannelSessions],
        key_of: Callable[[Thread], str] | None = None,
    ) -> None:
        self.api_url = api_url
        self.token_env = token_env
        self.sessions = sessions
        self.key_of = key_of
        #: this courier as a lease's holder
        self.owner = f"courier-{uuid.uuid4().hex}"
        self._locks: dict[str, asyncio.Lock] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def client(self) -> WebClient:
        # https://api.slack.com/docs/rate-limits: wait Retry-After, then try again (a 429
        # posted nothing). Not slack_sdk's default retry of a dropped connection: the post
        # may have been taken before the answer was lost, and a blind retry posts it twice;
        # ``deliver`` tries again instead, reading the thread back first.
        rate_limits = RateLimitErrorRetryHandler(max_retry_count=2)
        return WebClient(
            token=env_secret(self.token_env),
            base_url=self.api_url,
            timeout=10,
            retry_handlers=[rate_limits],
        )

    def keep(self, task: asyncio.Task[None]) -> None:
        """Hold a background task until it is done (the loop only keeps a weak reference)."""
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            # a thread left undelivered is delivered by its next event, or the next start
            log.warning("slack: a delivery failed: %s: %s", type(error).__name__, error)

    def follow(self, thread: Thread, turn_id: str, start: int) -> None:
        """In the background: wait for the turn to stop, then deliver the thread."""
        self.keep(asyncio.create_task(self._follow(thread, turn_id, start)))

    def deliver_later(self, thread: Thread) -> None:
        self.keep(asyncio.create_task(self.deliver(thread)))

    async def _follow(self, thread: Thread, turn_id: str, start: int) -> None:
        sessions = self.sessions()
        async for piece in turn_pieces(sessions, thread.session_id, turn_id, start, follow=True):
            if isinstance(piece, Ended):
                break
        await self.deliver(thread)

    async def deliver(self, thread: Thread) -> None:
        """Post every reply the log has and the thread lacks. A lost answer or Slack's own
        trouble (a 5xx) is tried again, ``DELIVERY_TRIES`` times in all, each try reading
        the thread back first; a refusal, or trouble past the tries, is logged and left to
        the thread's next delivery."""
        lock = self._locks.setdefault(thread.session_id, asyncio.Lock())
        async with lock, self._leased(thread):
            for attempt in range(1, DELIVERY_TRIES + 1):
                try:
                    await self._deliver(thread)
                    return
                except (SlackApiError, OSError, HTTPException) as error:
                    why = _failure(error)
                    if why is None or attempt == DELIVERY_TRIES:
                        log.warning(
                            "slack: replies of session %s not posted yet (%s); the "
                            "thread's next event delivers them",
                            thread.session_id,
                            why or _refusal(error),
                        )
                        return
                    log.info(
                        "slack: %s delivering session %s; trying again", why, thread.session_id
                    )
                    await asyncio.sleep(RETRY_DELAY_SECONDS * 2 ** (attempt - 1))

    @contextlib.asynccontextmanager
    async def _leased(self, thread: Thread) -> AsyncIterator[None]:
        """Hold the thread's delivery lease, waiting while another worker holds it: it may
        have read the thread back before this worker's reply was in the log, so this one
        reads it again once that one is done. A thread with no row (a scheduled run's
        thread before its record) is delivered unleased."""
        if self.key_of is None:
            yield
            return
        key, channel = self.key_of(thread), self.sessions()
        store, principal = channel.service.store, channel.principal

        def take(c: Connection) -> bool | None:
            now = time.time()
            return take_lease(c, principal, key, owner=self.owner, now=now, seconds=LEASE_SECONDS)

        while (held := await asyncio.to_thread(store.run, take)) is False:
            # another process's lease: it ends when dropped or run out (a dead worker's)
            await asyncio.sleep(LEASE_POLL_SECONDS)
        try:
            yield
        finally:
            if held:
                await asyncio.to_thread(
                    store.run, lambda c: drop_lease(c, principal, key, owner=self.owner)
                )

    async def _deliver(self, thread: Thread) -> None:
        replies = await log_replies(self.sessions(), thread.session_id)
        if not replies:
            return
        client = self.client()
        posted = await asyncio.to_thread(self._posted, client, thread)
        for reply in replies:
            index = reply.end.index
            text = reply_text(reply)
            if index in posted or not (text or reply.end.requests):
                continue
            metadata = reply_metadata(thread.session_id, index)
            await asyncio.to_thread(
                client.chat_postMessage,
                channel=thread.channel,
                thread_ts=thread.ts,
                text=text,
                blocks=_blocks(reply, thread) or None,
                metadata=metadata,
            )

    def _posted(self, client: WebClient, thread: Thread) -> set[int]:
        """The log indexes whose replies the thread has (from their metadata)."""
        found: set[int] = set()
        cursor = None
        while True:
            page = client.conversations_replies(
                channel=thread.channel, ts=thread.ts, include_all_metadata=True, cursor=cursor
            )
            messages: list[dict[str, Any]] = page.get("messages", [])
            for message in messages:
                payload = _reply_of(message, thread.session_id)
                if payload is not None:
                    found.add(int(payload["index"]))
                    # a scheduled run's message stands for every stop of its turn
                    # (eve.schedules.channel_delivery)
                    found.update(int(i) for i in payload.get("covers", []))
            cursor = (page.get("response_metadata") or {}).get("next_cursor")
            if not cursor:
                return found

    async def starter(self, thread: Thread) -> str:
        """Who started the thread: the speaker of the session's first message."""
        async for line in await self.sessions().events(thread.session_id, 0, follow=False):
            event = decode_event(line) if line else None
            if isinstance(event, MessageReceived):
                found = _SPEAKER.match(event.data.message)
                return found.group(1) if found else ""
        return ""
