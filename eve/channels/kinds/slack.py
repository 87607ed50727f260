"""The ``slack`` channel kind: a Slack app's Events API and interactivity over eve sessions.

``POST <path>/events`` takes the Events API (URL verification, then ``app_mention`` and
direct messages); ``POST <path>/interactivity`` takes Block Kit button presses. Every
request must carry a valid ``X-Slack-Signature`` for the app's signing secret, at most five
minutes old (slack_sdk's ``SignatureVerifier``). One thread is one session: the session is
opened under the idempotency key ``slack:<channel name>:<team>:<channel>:<thread ts>``, and
the thread finds it again by that key as long as the session is kept
(``eve.channels.conversation_keys``, not the key's 24 hours); each event's message is
sent under a key from its ``event_id``, so Slack's retries queue nothing twice. Replies are
posted by ``slack_delivery.Courier`` (docs/channels/slack.md).

The channel's principal owns the threads' sessions, so anyone in a thread talks to its
session through the channel; each message and each button press is made for the Slack user
who wrote or pressed it (``slack_user``): the turn's sender, the asker of its approvals, and
the one who may answer them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import time
from collections.abc import Iterator
from functools import partial
from http.client import HTTPException
from typing import Any
from urllib.parse import parse_qs

import msgspec
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from eve.errors import ServerConfigError

try:
    from slack_sdk.errors import SlackApiError
    from slack_sdk.signature import SignatureVerifier
except ImportError as missing:  # an optional extra: say which
    raise ServerConfigError(
        "the slack channel kind needs the slack_sdk package: pip install 'eve-durable[slack]'"
    ) from missing

from eve.auth import Principal
from eve.channels.conversation_keys import RECENT_SECONDS, open_conversation, recent, touch
from eve.channels.mount import ChannelMount
from eve.channels.sessions import ChannelSessions
from eve.channels.slack_delivery import Courier, Thread, env_secret, speaker_line, thread_session
from eve.channels.turn_log import log_head, running_turn, start_turn
from eve.errors import (
    AnswerNotAllowed,
    ChannelAnswerExpected,
    ChannelRequestInvalid,
    EveError,
    IdempotencyKeyReused,
    InputRequestNotPending,
    SlackSignatureInvalid,
)
from eve.sessions import InputResponse

log = logging.getLogger("eve.channels.slack")

#: the largest request Slack sends is far below this; a bigger one is not Slack's
MAX_BODY_BYTES = 1_000_000
#: a mention of a user or the bot, removed from the text the agent gets
_MENTION = re.compile(r"<@[A-Z0-9]+>")
#: a mention whose whole text is one of these cancels the thread's running turn
CANCEL_WORDS = frozenset({"cancel", "stop"})


class Options(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    #: the variable holding the app's signing secret (Basic Information in the app's settings)
    signing_secret_env: str = "SLACK_SIGNING_SECRET"
    #: the variable holding the bot token (``xoxb-…``) replies are posted with
    bot_token_env: str = "SLACK_BOT_TOKEN"
    #: the Web API's base URL (a loopback one in tests)
    api_url: str = "https://slack.com/api/"


def slack_user(team: str, user: str) -> Principal:
    """A Slack user as the principal a turn is sent by and an answer given by. It holds no
    roles: Slack says who pressed, not what they may approve, so an approval a tool gives a
    role (``by="role:…"``) is answered elsewhere, by a holder of the role or an operator."""
    return Principal(id=f"slack:{team}:{user}", kind="channel", claims={"team": team, "user": user})


def channel_principal(name: str) -> Principal:
    """Who the slack channel ``name`` is: the owner of its threads' sessions."""
    return Principal(id=f"slack:{name}", kind="channel")


def thread_key(name: str, team: str, channel: str, ts: str) -> str:
    """The idempotency key the thread ``ts`` of ``channel`` opens its session under; a
    scheduled run posted there records its session under it too (eve.schedules)."""
    return f"slack:{name}:{team}:{channel}:{ts}"


def _addressed(event: dict[str, Any]) -> bool:
    """A person's mention of the bot, or a direct message to it; never a bot's own message
    or an edit (their ``subtype``), so the bot does not answer itself."""
    if event.get("bot_id") or event.get("subtype") or not event.get("user"):
        return False
    if event.get("type") == "app_mention":
        return True
    return event.get("type") == "message" and event.get("channel_type") == "im"


class _SlackChannel:
    def __init__(self, mount: ChannelMount[Options]) -> None:
        self.mount = mount
        self.options = mount.options
        # the channel owns its sessions; each user's turns and answers are that user's
        self.principal = channel_principal(mount.name)
        self.courier = Courier(
            api_url=mount.options.api_url,
            token_env=mount.options.bot_token_env,
            sessions=self.sessions,
            key_of=lambda thread: self.thread_key(thread.team, thread.channel, thread.ts),
        )
        self.swept = False

    def sessions(self, acting: Principal | None = None) -> ChannelSessions:
        """The channel's sessions, used for ``acting`` (a Slack user) when given."""
        return self.mount.sessions(self.principal, acting=acting)

    def thread_key(self, team: str, channel: str, ts: str) -> str:
        return thread_key(self.mount.name, team, channel, ts)

    # --- requests --------------------------------------------------------------------------

    async def verified(self, request: Request) -> bytes:
        raw = await request.body()
        if len(raw) > MAX_BODY_BYTES:
            raise ChannelRequestInvalid(f"the body is over {MAX_BODY_BYTES} bytes")
        stamp = request.headers.get("x-slack-request-timestamp")
        verifier = SignatureVerifier(env_secret(self.options.signing_secret_env))
        valid = stamp is not None and stamp.isdigit()
        if not (valid and verifier.is_valid(raw, stamp, request.headers.get("x-slack-signature"))):
            raise SlackSignatureInvalid(
                "the request has no valid X-Slack-Signature for this app's signing secret, or "
                "its X-Slack-Request-Timestamp is more than five minutes away",
                param="x-slack-signature",
            )
        self._sweep_once()
        return raw

    async def events(self, request: Request) -> Response:
        try:
            payload = _json_object(await self.verified(request))
            if payload.get("type") == "url_verification":
                return JSONResponse({"challenge": payload.get("challenge")})
            if payload.get("type") == "event_callback":
                retried = "x-slack-retry-num" in request.headers
                with _slack_shaped("event"):
                    await self.on_event(payload, retried=retried)
            return JSONResponse({"ok": True})
        except EveError as error:
            return _refused(error)

    async def on_event(self, payload: dict[str, Any], *, retried: bool) -> None:
        event = payload.get("event")
        if not isinstance(event, dict) or not _addressed(event):
            return  # Slack sends what the app subscribed to; only these start a turn
        team, channel, user = str(payload["team_id"]), event["channel"], event["user"]
        thread_ts = event.get("thread_ts") or event["ts"]
        text = _MENTION.sub("", event.get("text", "")).strip()
        sessions = self.sessions(slack_user(team, user))
        key = self.thread_key(team, channel, thread_ts)
        # a reply in a thread eve has no key for: its first message may say (a scheduled
        # run's message whose thread the run's delivery has not recorded yet)
        in_thread = thread_ts != event["ts"]
        told = partial(self._thread_session, channel, thread_ts) if in_thread else None
        session_id = await open_conversation(sessions, key, told=told)
        thread = Thread(team=team, channel=channel, ts=thread_ts, session_id=session_id)
        if text.lower() in CANCEL_WORDS:
            await self.cancel(thread, user)
            return
        try:
            started = await start_turn(
                sessions,
                thread.session_id,
                speaker_line(user, text),
                key=f"slack-event:{payload.get('event_id')}",
                param="event.text",
            )
        except ChannelAnswerExpected:
            if retried:  # the first delivery of this event told the user already
                self.courier.deliver_later(thread)
                return
            await self._tell(channel, user, "The agent waits on an answer: use the buttons above.")
            return
        self.courier.follow(thread, started.turn_id, started.start)

    async def _thread_session(self, channel: str, ts: str) -> str | None:
        client = self.courier.client()
        try:
            return await asyncio.to_thread(thread_session, client, channel, ts)
        except (SlackApiError, OSError, HTTPException) as error:
            # Slack cannot say now: the thread is taken as one eve never posted in
            log.warning("slack: thread %s's first message unread (%s)", ts, type(error).__name__)
            return None

    async def cancel(self, thread: Thread, user: str) -> None:
        """``@bot cancel`` from the thread's starter stops its running turn; the courier
        following that turn then posts it as cancelled."""
        starter = await self.courier.starter(thread)
        if user != starter:
            await self._tell(
                thread.channel, user, f"Only <@{starter}> may cancel this thread's turn."
            )
        elif not await self.sessions().cancel(thread.session_id):
            await self._tell(thread.channel, user, "Nothing is running in this thread.")

    async def interactivity(self, request: Request) -> Response:
        try:
            form = parse_qs((await self.verified(request)).decode())
            payload = _json_object(form.get("payload", [""])[0].encode())
            if payload.get("type") == "block_actions":
                with _slack_shaped("payload"):
                    for action in payload.get("actions", []):
                        value = _json_object(str(action["value"]).encode())
                        await self.on_action(payload, value)
            return Response(status_code=200)
        except EveError as error:
            return _refused(error)

    async def on_action(self, payload: dict[str, Any], value: dict[str, Any]) -> None:
        user, channel = payload["user"]["id"], payload["channel"]["id"]
        team = str(payload["team"]["id"])
        message = payload.get("message") or {}
        ts = str(message.get("thread_ts") or message.get("ts"))
        thread = Thread(team=team, channel=channel, ts=ts, session_id=str(value["s"]))
        request_id = str(value["r"])
        await self._touch(thread)
        head = await log_head(self.sessions(), thread.session_id)
        try:
            await self._answer(
                thread, user, InputResponse(request_id=request_id, option_id=str(value["o"]))
            )
        except AnswerNotAllowed:
            await self._tell(
                channel, user, "Only the person whose message asked this may answer it."
            )
            return
        except (IdempotencyKeyReused, InputRequestNotPending):
            # another button of the same request was pressed first
            await self._tell(channel, user, "This was answered already.")
            return
        except EveError as error:  # the session ended, say
            await self._tell(channel, user, error.message)
            return
        turns = [p.turn_id for p in head.pending if p.request.request_id == request_id]
        if turns:
            self.courier.follow(thread, turns[0], head.next_index)
        else:
            self.courier.deliver_later(thread)

    async def _touch(self, thread: Thread) -> None:
        """The thread spoke: a restart soon after catches up on it (``_threads``)."""
        key, now = self.thread_key(thread.team, thread.channel, thread.ts), time.time()
        store = self.mount.service.store
        await asyncio.to_thread(store.run, lambda c: touch(c, self.principal, key, now))

    async def _answer(self, thread: Thread, user: str, answer: InputResponse) -> None:
        """``answer``, given by ``user``. A request the channel itself asked (a turn an eve
        from before Slack users were principals sent) is answered for the channel, as it
        was then, when the thread's starter presses."""
        # keyed per user: another user's press of an answered request is told so, not
        # replayed as if it had been theirs
        key = f"slack-action:{answer.request_id}:{user}"
        try:
            acting = self.sessions(slack_user(thread.team, user))
            await acting.respond(thread.session_id, [answer], key=key)
        except AnswerNotAllowed:
            if user != await self.courier.starter(thread):
                raise
            await self.sessions().respond(thread.session_id, [answer], key=key)

    async def _tell(self, channel: str, user: str, text: str) -> None:
        """A note only ``user`` sees (``chat.postEphemeral``)."""
        client = self.courier.client()
        await asyncio.to_thread(client.chat_postEphemeral, channel=channel, user=user, text=text)

    # --- after a restart ---------------------------------------------------------------------

    async def started(self) -> None:
        """The server's session service has started: catch up at once."""
        self._sweep_once()

    def _sweep_once(self) -> None:
        """Once the server started (or, where no lifespan ran, on the first verified
        request): pick up every thread whose replies a stopped server did not post, or
        whose turn it ran."""
        if not self.swept:
            self.swept = True
            task = asyncio.create_task(self._sweep())
            self.courier.keep(task)

    async def _sweep(self) -> None:
        for thread in await self._threads():
            running = await running_turn(self.sessions(), thread.session_id)
            if running is not None:
                self.courier.follow(thread, *running)
            else:
                await self.courier.deliver(thread)

    async def _threads(self) -> list[Thread]:
        """The channel's threads that spoke within ``RECENT_SECONDS``: an older one's
        reply a stopped server left unposted is posted by the thread's next event."""
        prefix = f"slack:{self.mount.name}:"
        since = time.time() - RECENT_SECONDS
        store = self.mount.service.store
        found = await asyncio.to_thread(
            store.run, lambda c: recent(c, self.principal, prefix, since=since)
        )
        threads = []
        for key, session_id in found.items():
            team, channel, ts = key.removeprefix(prefix).split(":", 2)
            threads.append(Thread(team=team, channel=channel, ts=ts, session_id=session_id))
        return threads


@contextlib.contextmanager
def _slack_shaped(param: str) -> Iterator[None]:
    """A signed payload missing what Slack always sends (a ``user``, a ``channel``) is
    refused as such, not a 500."""
    try:
        yield
    except (KeyError, TypeError, AttributeError) as missing:
        raise ChannelRequestInvalid(
            f"the {param} lacks what Slack sends ({type(missing).__name__}: {missing})",
            param=param,
        ) from None


def _json_object(raw: bytes) -> dict[str, Any]:
    try:
        found = json.loads(raw)
    except ValueError:
        found = None
    if not isinstance(found, dict):
        raise ChannelRequestInvalid("the body is not the JSON object Slack sends")
    return found


def _refused(error: EveError) -> JSONResponse:
    body = {"ok": False, "error": error.code, "message": error.message}
    return JSONResponse(body, status_code=error.http_status)


def routes(mount: ChannelMount[Options]) -> list[BaseRoute]:
    channel = _SlackChannel(mount)
    mount.on_start.append(channel.started)
    return [
        Route(mount.path + "/events", channel.events, methods=["POST"]),
        Route(mount.path + "/interactivity", channel.interactivity, methods=["POST"]),
    ]
