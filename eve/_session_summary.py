"""What ``GET /eve/v1/session/{id}`` answers (a session's status, turns, spend and limits)
and what ``GET /eve/v1/sessions`` answers (a page of sessions, newest first).

Boundary data: the server builds it (``eve.sessions.summary``) and the client decodes it,
so it lives beside the other shared modules and imports none of the packages.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Literal

import msgspec

from eve._usage import TokenUsage
from eve.auth.principal import PrincipalRef
from eve.costs import Cost


class SessionLimits(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, rename="camel"):
    """A session's limits, or what is left of each; a limit not set is left out."""

    #: uncached input tokens, as the limit counts them
    max_input_tokens_per_session: int | None = None
    max_output_tokens_per_session: int | None = None
    #: USD, a decimal string in JSON
    max_cost_usd_per_session: Decimal | None = None
    #: seconds of idleness (``left``: until the idle timer ends the session)
    session_timeout_seconds: float | None = None


class SessionSummary(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A session as of its last finished turn (its running turn is not in the totals yet)."""

    session_id: str
    #: who created it (id and kind, never claims): only it and operators may see it
    owner: PrincipalRef | None = None
    #: ``active`` (takes messages) or ``ended``
    status: str
    #: why it ended (``max_input_tokens_per_session``, ``session_timeout``, …)
    ended_reason: str | None = None
    #: the session this one is a fork of; None for a session that is not one
    forked_from: str | None = None
    #: turns finished (a fork's count its source's, up to the fork)
    turns: int = 0
    #: the session's tokens by kind and what they cost, its subagents' included
    usage: TokenUsage = TokenUsage()
    cost: Cost = Cost()
    #: the agent's limits on the session, and how much of each is left (never below 0)
    limits: SessionLimits = SessionLimits()
    left: SessionLimits = SessionLimits()


_decoder = msgspec.json.Decoder(SessionSummary)


def decode_summary(data: bytes | str) -> SessionSummary:
    return _decoder.decode(data)


#: what a session is doing, from its latest events: no turn yet (``new``), a turn running,
#: a turn parked on a person's answer (``waiting``), its last turn ``completed``, ``failed``
#: or ``cancelled`` (it takes the next message), or the session ``ended``
Activity = Literal["new", "running", "waiting", "completed", "failed", "cancelled", "ended"]


class SessionListEntry(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """One session of ``GET /eve/v1/sessions``."""

    session_id: str
    #: who created it (id and kind)
    owner: PrincipalRef | None = None
    #: ``active`` (takes messages) or ``ended``
    status: str
    activity: Activity
    ended_reason: str | None = None
    #: ISO-8601 UTC: when it was created, and its latest event (its creation if none)
    created_at: str
    last_activity_at: str
    #: turns finished, and their tokens and cost (as in the session's summary)
    turns: int = 0
    usage: TokenUsage = TokenUsage()
    cost: Cost = Cost()


class SessionPage(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A page of sessions, newest first; ``next_cursor`` asks for the next (older) page,
    and is None on the last one."""

    ok: bool = True
    sessions: list[SessionListEntry]
    next_cursor: str | None = None


_page_decoder = msgspec.json.Decoder(SessionPage)


def decode_page(data: bytes | str) -> SessionPage:
    return _page_decoder.decode(data)
