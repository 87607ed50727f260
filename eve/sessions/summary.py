"""A session's summary from its row, its checkpoint and the agent's limits (no I/O here)."""

from __future__ import annotations

from decimal import Decimal
from typing import TypeVar

from eve._session_summary import SessionLimits, SessionSummary
from eve.execution.limits import LimitName, allowed, used
from eve.manifest import Limits
from eve.sessions.checkpoint import SessionCheckpoint
from eve.sessions.store import SessionRow


def limits_of(config: Limits, raised: dict[str, int]) -> SessionLimits:
    """The session's limits: as configured, each grown by the raises a person gave it."""

    def tokens(name: LimitName) -> int | None:
        cap = allowed(config, raised, name)
        return None if cap is None else int(cap)

    return SessionLimits(
        max_input_tokens_per_session=tokens("max_input_tokens_per_session"),
        max_output_tokens_per_session=tokens("max_output_tokens_per_session"),
        max_cost_usd_per_session=allowed(config, raised, "max_cost_usd_per_session"),
        session_timeout_seconds=config.session_timeout_seconds,
    )


N = TypeVar("N", int, float, Decimal)


def _left(limit: N | None, used: N) -> N | None:
    if limit is None:
        return None
    remaining = limit - used
    return remaining if remaining > 0 else limit - limit  # 0 of the limit's own type


def summarize(
    row: SessionRow, checkpoint: SessionCheckpoint, config: Limits, *, idle_left: float | None
) -> SessionSummary:
    """``row``'s session as of ``checkpoint``, under the limits ``config`` sets;
    ``idle_left`` is how long until its idle timeout, if it has one (``idle_timer``).

    What is left of a limit counts as the limit's check does (``execution.limits.used``):
    uncached input or output tokens, or the priced part of the cost (an unpriced model's
    share is unknown)."""
    limits = limits_of(config, checkpoint.raised_limits)
    spend = checkpoint.spend
    left = SessionLimits(
        max_input_tokens_per_session=_left(
            limits.max_input_tokens_per_session,
            int(used(spend, "max_input_tokens_per_session")),
        ),
        max_output_tokens_per_session=_left(
            limits.max_output_tokens_per_session,
            int(used(spend, "max_output_tokens_per_session")),
        ),
        max_cost_usd_per_session=_left(
            limits.max_cost_usd_per_session, used(spend, "max_cost_usd_per_session")
        ),
        session_timeout_seconds=None if idle_left is None else max(idle_left, 0.0),
    )
    return SessionSummary(
        session_id=row.id,
        owner=row.owner,
        status=row.status,
        ended_reason=row.ended_reason,
        forked_from=row.forked_from,
        turns=checkpoint.turns,
        usage=spend.usage,
        cost=spend.cost,
        limits=limits,
        left=left,
    )
