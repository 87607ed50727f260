"""What a channel kind is given to build its routes: the contract between eve and a kind.

A kind (``eve/channels/kinds/<kind>.py``) exports ``Options`` (a msgspec Struct of its
settings, as written in ``agent/channels/<name>.py``) and ``routes(mount) -> list[BaseRoute]``.
Its routes live under ``mount.path``; they authenticate each request themselves, through
``mount.authenticate`` or the protocol's own scheme, and reach sessions only through
``mount.sessions(principal)``: a channel is a view over the durable session and keeps no
state of its own."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from starlette.requests import Request

from eve.auth import Principal
from eve.authoring.channels import ChannelHandler
from eve.channels.sessions import ChannelSessions
from eve.execution.setup import AgentSetup
from eve.sessions import SessionService

OptionsT = TypeVar("OptionsT")

#: the principal of a request by the server's scheme (its bearer token, verified tokens);
#: raises ``eve.errors.Unauthorized`` for a request without valid credentials
Authenticate = Callable[[Request], Awaitable[Principal]]
#: what a kind runs once the server's session service has started (a restart's catch-up)
StartHook = Callable[[], Awaitable[None]]


@dataclass(frozen=True, kw_only=True)
class ChannelMount(Generic[OptionsT]):
    #: the channel's name: its file's name in ``agent/channels/``
    name: str
    #: the URL path its routes live under, without a trailing slash (``/channels/<name>``)
    path: str
    options: OptionsT
    service: SessionService
    authenticate: Authenticate
    #: a ``define_channel``'s handler (the ``custom`` kind); None for the built-in kinds
    handler: ChannelHandler | None = None
    #: hooks the kind adds from ``routes(mount)``, awaited in order once the session service
    #: has started: work a stopped server left (a reply not yet posted) is picked up then,
    #: not when the next request happens to come. A hook that takes long starts a task
    on_start: list[StartHook] = field(default_factory=list)

    @property
    def setup(self) -> AgentSetup:
        return self.service.setup

    def sessions(self, principal: Principal, *, acting: Principal | None = None) -> ChannelSessions:
        """The sessions ``principal`` may reach, and what they may do with them; ``acting``:
        the person the channel sends turns and answers for (``ChannelSessions``)."""
        return ChannelSessions(self.service, principal, acting=acting)
