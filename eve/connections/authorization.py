"""The person's part of an OAuth sign-in: who is told the link, and how their answer comes back.

A connection that needs a sign-in (``eve.connections.oauth_client``) sends the person to the
authorization server; that server sends them back to eve's callback with a ``code`` and the
``state`` it was given. The sign-in in progress waits here, keyed by that ``state`` (32
random bytes, so only the holder of the link can answer it), and the callback, whichever door
it came through (the HTTP route ``/eve/v1/oauth/callback``, the loopback listener of
``eve run``), completes it. This module imports no ``mcp``: the server and the session
runtime import it cheaply.

A waiting sign-in lives in the process that started it (the verifier of its PKCE challenge
never leaves it): across a restart it is gone, and the turn that resumes asks again with a
new link (the tool call it waited in never reached the server, which had answered 401).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

from eve.context import active_context
from eve.errors import OAuthCallbackInvalid

if TYPE_CHECKING:
    from eve.events import AuthorizationRequiredData
    from eve.sessions.store import SessionStore

#: eve's callback route; the redirect URL of a connection points at it
CALLBACK_PATH = "/eve/v1/oauth/callback"
#: the redirect URL when neither the connection nor ``EVE_OAUTH_REDIRECT_URL`` gives one:
#: loopback (RFC 8252 §7.3), answered by a listener the waiting process opens there
#: (``connections.loopback``), or by an eve server on this port
DEFAULT_REDIRECT_URL = f"http://127.0.0.1:33418{CALLBACK_PATH}"
REDIRECT_ENV = "EVE_OAUTH_REDIRECT_URL"

#: how a sign-in tells the turn (the emitter's ``emit``: what it returns is not used)
Notify = Callable[["AuthorizationRequiredData"], Awaitable[object]]


@dataclass(frozen=True, kw_only=True)
class TurnAuthorization:
    """What a turn lends its connections' sign-ins: where tokens are kept (the session
    database; opened on first use), and how the person is told (an
    ``authorization.required`` event of the turn)."""

    store: Callable[[], SessionStore] | None = None
    notify: Notify | None = None


#: set around each turn (the session runtime lends the store, the loop the events); tool
#: calls and listings run in its context
turn_authorization: ContextVar[TurnAuthorization | None] = ContextVar(
    "eve_turn_authorization", default=None
)


@contextlib.contextmanager
def lent(
    *, store: Callable[[], SessionStore] | None = None, notify: Notify | None = None
) -> Iterator[None]:
    """Lend the block's turns ``store`` and/or ``notify``, keeping what an outer block
    lent for the other."""
    outer = turn_authorization.get() or TurnAuthorization()
    token = turn_authorization.set(
        TurnAuthorization(store=store or outer.store, notify=notify or outer.notify)
    )
    try:
        yield
    finally:
        turn_authorization.reset(token)


@dataclass(frozen=True, kw_only=True)
class Callback:
    """What the authorization server sent the person back with (RFC 6749 §4.1.2, §4.1.2.1)."""

    state: str
    code: str | None = None
    #: the authorization server's issuer identifier (RFC 9207), when it sends one
    iss: str | None = None
    #: ``access_denied`` and the like, with its description
    error: str | None = None
    error_description: str | None = None


@dataclass
class _Waiting:
    loop: asyncio.AbstractEventLoop
    answer: asyncio.Future[Callback]
    #: how long the sign-in waits for its callback
    seconds: float


_waiting: dict[str, _Waiting] = {}
#: the states whose callback came, each until when (``time.monotonic``) a request of the
#: same callback URL is answered as the first was: a person who reloads the tab after
#: signing in (or a browser that sends the navigation again) is told they are signed in,
#: not that no sign-in waits
_answered: dict[str, float] = {}


def principal_key() -> str:
    """Whose grant a call uses: the turn's principal (``user:alice``), else the operator's."""
    context = active_context()
    if context is None:
        return "operator:operator"
    return f"{context.principal.kind}:{context.principal.id}"


def redirect_url(declared: str | None) -> str:
    """Where the person is sent back: the connection's own, else ``EVE_OAUTH_REDIRECT_URL``,
    else the loopback default."""
    return declared or os.environ.get(REDIRECT_ENV) or DEFAULT_REDIRECT_URL


def expect(
    state: str, *, seconds: float, loop: asyncio.AbstractEventLoop | None = None
) -> asyncio.Future[Callback]:
    """A future (of ``loop``, by default the running one) the callback carrying ``state``
    resolves, waited for up to ``seconds`` (after the callback, as long again its repeats
    are answered as it was); ``forget`` it when done."""
    loop = loop or asyncio.get_running_loop()
    answer: asyncio.Future[Callback] = loop.create_future()
    _waiting[state] = _Waiting(loop=loop, answer=answer, seconds=seconds)
    return answer


def forget(state: str) -> None:
    _waiting.pop(state, None)


def complete(callback: Callback) -> None:
    """Hand ``callback`` to the sign-in waiting for its state (from any thread or loop); a
    callback of a state answered recently changes nothing and is taken as the first was.
    ``OAuthCallbackInvalid`` when none waits or it carries neither a code nor an error."""
    if callback.code is None and callback.error is None:
        raise OAuthCallbackInvalid("the OAuth callback carries neither code nor error")
    now = time.monotonic()
    _forget_answered(now)
    waiting = _waiting.pop(callback.state, None)
    if waiting is None:
        if callback.state in _answered:
            return  # answered already: the sign-in took the first one
        raise OAuthCallbackInvalid(
            "no sign-in waits for this OAuth callback (expired, used long ago, or started "
            "before a restart): send the message again for a new link"
        )
    _answered[callback.state] = now + waiting.seconds
    waiting.loop.call_soon_threadsafe(_answer, waiting.answer, callback)


def _forget_answered(now: float) -> None:
    for state, until in list(_answered.items()):
        if until <= now:
            _answered.pop(state, None)


def _answer(answer: asyncio.Future[Callback], callback: Callback) -> None:
    if not answer.done():
        answer.set_result(callback)


def callback_of(query: dict[str, str]) -> Callback:
    """The callback a redirect's query string describes."""
    state = query.get("state")
    if not state:
        raise OAuthCallbackInvalid("the OAuth callback carries no state")
    return Callback(
        state=state,
        code=query.get("code"),
        iss=query.get("iss"),
        error=query.get("error"),
        error_description=query.get("error_description"),
    )
