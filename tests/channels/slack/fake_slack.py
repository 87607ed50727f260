"""A loopback Slack Web API: the methods the slack channel calls, with Slack's documented rules.

It keeps channels and their messages, and answers ``chat.postMessage``,
``chat.postEphemeral``, ``conversations.replies`` and ``conversations.history`` as Slack
does, including the refusals (each rule cites the page it comes from). The tests post users' messages into it directly,
then send eve the signed Events API request Slack would send for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.sessions.harness import free_port

BOT_TOKEN = "xoxb-test-bot-token"
BOT_USER = "UBOT"
TEAM = "T1"
#: how long a read waits for the others of its party (``replies_barrier``)
BARRIER_SECONDS = 2.0
#: how long a held answer waits at most (``hold_answer``)
HOLD_SECONDS = 30.0


@dataclass
class FakeSlack:
    channels: set[str] = field(default_factory=lambda: {"C1"})
    #: each channel's messages, oldest first, as conversations.replies returns them
    messages: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    ephemeral: list[dict[str, Any]] = field(default_factory=list)
    #: how many of the next chat.postMessage calls are answered 429
    rate_limit_next: int = 0
    rate_limited: int = 0
    #: how many of the next chat.postMessage calls fail as Slack's own fault (HTTP 500)
    fail_next: int = 0
    #: how many of the next chat.postMessage calls Slack takes (the message is posted)
    #: but whose answer is lost on the way: the connection drops mid-answer
    lose_answer_next: int = 0
    #: when set, the next chat.postMessage is posted, then its answer waits until the
    #: event is set (the test kills the caller meanwhile)
    hold_answer: threading.Event | None = None
    #: when set, each conversations.replies call waits for the others of its party (or its
    #: timeout) before it answers: the test lines up concurrent reads with it
    replies_barrier: threading.Barrier | None = None
    #: every chat.postMessage call's channel, in order, refused ones included
    post_attempts: list[str] = field(default_factory=list)
    _clock: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)
    port: int = field(default_factory=free_port)
    _server: uvicorn.Server | None = None

    @property
    def running(self) -> bool:
        return self._server is not None and not self._server.should_exit

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def next_ts(self) -> str:
        return f"{int(time.time())}.{next(self._clock):06d}"

    def say(self, channel: str, user: str, text: str, thread_ts: str | None = None) -> str:
        """A person's message, as Slack stores it; its ts."""
        ts = self.next_ts()
        message = {"type": "message", "user": user, "text": text, "ts": ts}
        if thread_ts is not None:
            message["thread_ts"] = thread_ts
        with self._lock:
            self.messages.setdefault(channel, []).append(message)
        return ts

    def thread(self, channel: str, thread_ts: str) -> list[dict[str, Any]]:
        with self._lock:
            return [
                m
                for m in self.messages.get(channel, [])
                if m["ts"] == thread_ts or m.get("thread_ts") == thread_ts
            ]

    def bot_replies(self, channel: str, thread_ts: str) -> list[dict[str, Any]]:
        return [m for m in self.thread(channel, thread_ts) if m.get("bot_id")]

    # --- the Web API ---------------------------------------------------------------------

    async def _call(self, request: Request) -> Response:
        method = request.path_params["method"]
        # https://api.slack.com/web#authentication: the token goes in the Authorization
        # header; without one a method answers not_authed, with a wrong one invalid_auth
        auth = request.headers.get("authorization", "")
        if not auth:
            return _error("not_authed")
        if auth != f"Bearer {BOT_TOKEN}":
            return _error("invalid_auth")
        args: dict[str, Any] = dict(request.query_params)
        if request.method == "POST":
            if request.headers.get("content-type", "").startswith("application/json"):
                args.update(await request.json())
            else:
                args.update(dict(await request.form()))
        if method == "conversations.replies" and self.replies_barrier is not None:
            with contextlib.suppress(threading.BrokenBarrierError):
                await asyncio.to_thread(self.replies_barrier.wait, BARRIER_SECONDS)
        if method == "chat.postMessage" and (held := self.hold_answer) is not None:
            self.hold_answer = None
            answer = self._post_message(args)
            await asyncio.to_thread(held.wait, HOLD_SECONDS)
            return answer
        handler = {
            "chat.postMessage": self._post_message,
            "chat.postEphemeral": self._post_ephemeral,
            "conversations.replies": self._replies,
            "conversations.history": self._history,
            "auth.test": self._auth_test,
        }.get(method)
        if handler is None:
            # https://api.slack.com/web#responses: an unknown method is unknown_method
            return _error("unknown_method")
        return handler(args)

    def _post_message(self, args: dict[str, Any]) -> Response:
        # https://api.slack.com/docs/rate-limits: over the limit a method answers HTTP 429
        # with a Retry-After header, the seconds to wait
        with self._lock:
            self.post_attempts.append(str(args.get("channel")))
            if self.fail_next > 0:
                # https://api.slack.com/web#responses: Slack's own trouble is a 5xx
                self.fail_next -= 1
                return JSONResponse({"ok": False, "error": "internal_error"}, status_code=500)
            if self.rate_limit_next > 0:
                self.rate_limit_next -= 1
                self.rate_limited += 1
                return JSONResponse(
                    {"ok": False, "error": "ratelimited"},
                    status_code=429,
                    headers={"retry-after": "1"},
                )
        # https://api.slack.com/methods/chat.postMessage#errors: channel_not_found, and
        # no_text for a message with neither text nor blocks
        channel = args.get("channel")
        if channel not in self.channels:
            return _error("channel_not_found")
        if not args.get("text") and not args.get("blocks"):
            return _error("no_text")
        thread_ts = args.get("thread_ts")
        message = {
            "type": "message",
            "bot_id": "B1",
            "user": BOT_USER,
            "text": args.get("text", ""),
            "ts": self.next_ts(),
            "blocks": args.get("blocks") or [],
            "metadata": args.get("metadata"),
        }
        if thread_ts is not None:
            message["thread_ts"] = thread_ts
        with self._lock:
            self.messages.setdefault(channel, []).append(message)
            lost = self.lose_answer_next > 0
            self.lose_answer_next -= lost
        answer = {"ok": True, "channel": channel, "ts": message["ts"], "message": message}
        return _LostAnswer() if lost else JSONResponse(answer)

    def _auth_test(self, args: dict[str, Any]) -> Response:
        # https://api.slack.com/methods/auth.test: who the token is, and its workspace
        return JSONResponse({"ok": True, "team_id": TEAM, "user_id": BOT_USER, "bot_id": "B1"})

    def _post_ephemeral(self, args: dict[str, Any]) -> Response:
        # https://api.slack.com/methods/chat.postEphemeral: channel and user are required
        if args.get("channel") not in self.channels:
            return _error("channel_not_found")
        if not args.get("user"):
            return _error("user_not_in_channel")
        with self._lock:
            self.ephemeral.append(args)
        return JSONResponse({"ok": True, "message_ts": self.next_ts()})

    def _replies(self, args: dict[str, Any]) -> Response:
        # https://api.slack.com/methods/conversations.replies: the parent and its replies;
        # metadata only with include_all_metadata (https://api.slack.com/metadata/using)
        channel = args.get("channel")
        if channel not in self.channels:
            return _error("channel_not_found")
        found = self.thread(channel, str(args.get("ts")))
        if not found:
            return _error("thread_not_found")
        with_metadata = str(args.get("include_all_metadata", "")).lower() in ("1", "true")
        shown = [
            m if with_metadata else {k: v for k, v in m.items() if k != "metadata"} for m in found
        ]
        return JSONResponse({"ok": True, "messages": shown, "has_more": False})

    def _history(self, args: dict[str, Any]) -> Response:
        # https://api.slack.com/methods/conversations.history: a conversation's messages
        # (not the replies in its threads), newest first, only those after ``oldest``
        # (exclusive unless ``inclusive``), at most ``limit`` (default 100, at most 999) a
        # page, the next page by ``response_metadata.next_cursor``; metadata only with
        # include_all_metadata
        channel = args.get("channel")
        if channel not in self.channels:
            return _error("channel_not_found")
        try:
            limit = min(int(args.get("limit") or 100), 999)
            start = int(args.get("cursor") or 0)
        except ValueError:
            return _error("invalid_cursor")
        oldest = float(args.get("oldest") or 0)
        inclusive = str(args.get("inclusive", "")).lower() in ("1", "true")
        with self._lock:
            top = [
                m
                for m in self.messages.get(channel, [])
                if m.get("thread_ts", m["ts"]) == m["ts"]
                and (float(m["ts"]) > oldest or (inclusive and float(m["ts"]) == oldest))
            ]
        top.sort(key=lambda m: float(m["ts"]), reverse=True)
        page = top[start : start + limit]
        with_metadata = str(args.get("include_all_metadata", "")).lower() in ("1", "true")
        shown = [
            m if with_metadata else {k: v for k, v in m.items() if k != "metadata"} for m in page
        ]
        more = start + limit < len(top)
        body: dict[str, Any] = {"ok": True, "messages": shown, "has_more": more}
        body["response_metadata"] = {"next_cursor": str(start + limit) if more else ""}
        return JSONResponse(body)

    # --- serving ---------------------------------------------------------------------------

    def start(self) -> FakeSlack:
        app = Starlette(routes=[Route("/api/{method}", self._call, methods=["GET", "POST"])])
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self._server = uvicorn.Server(config)
        thread = threading.Thread(target=self._server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            assert time.monotonic() < deadline, "the loopback Slack did not start"
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True


class _LostAnswer(Response):
    """An answer cut off on the way: its head is sent, then the connection drops before
    the body, as when a proxy or the network fails after Slack took the request."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        head = [(b"content-type", b"application/json"), (b"content-length", b"100")]
        await send({"type": "http.response.start", "status": 200, "headers": head})
        raise ConnectionAbortedError("the loopback Slack drops the answer, as told")


def _error(code: str) -> JSONResponse:
    # https://api.slack.com/web#responses: a refusal is HTTP 200 with ok false and an error
    return JSONResponse({"ok": False, "error": code})
