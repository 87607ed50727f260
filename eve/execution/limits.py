"""Session limits a person can lift: which limit a session's totals crossed, and what then.

The turn checks after each step (``transitions.next_action``). A crossed limit is put to
the turn's ``LimitHook``: a person raises it by its configured amount again (``raise``) or
ends the session (``end``). With no hook there is no one to ask (``eve run``, a bare
``run_agent``, a subagent's own limits): ``SessionLimitReached``. How many times each limit
was raised is the session's (``TurnState.raised_limits``, from
``TurnEnvironment.raised_limits`` and kept in its checkpoint), so a raise holds for the
turns after it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal, assert_never

from eve.costs import Spend
from eve.errors import SessionLimitReached
from eve.manifest import Limits

LimitName = Literal[
    "max_input_tokens_per_session", "max_output_tokens_per_session", "max_cost_usd_per_session"
]
LIMIT_NAMES: tuple[LimitName, ...] = (
    "max_input_tokens_per_session",
    "max_output_tokens_per_session",
    "max_cost_usd_per_session",
)
#: a person's decision: raise the limit by its amount again, or end the session
LimitDecision = Literal["raise", "end"]


@dataclass(frozen=True, kw_only=True)
class LimitCrossed:
    """The session's totals reached ``limit``: ``used`` of the ``allowed`` amount."""

    limit: LimitName
    used: Decimal
    allowed: Decimal
    #: what a raise adds: the configured limit
    raise_by: Decimal
    #: how many times it was raised before (with ``step``, names the question uniquely)
    times_raised: int
    #: the turn's step after which it was crossed
    step: int
    #: the session's tokens and cost so far
    spend: Spend


#: asks a person about a crossed limit; None when the turn was cancelled instead
LimitHook = Callable[[LimitCrossed], Awaitable[LimitDecision | None]]


def configured(limits: Limits, name: LimitName) -> Decimal | None:
    """The limit as the agent sets it; None when it is not set."""
    match name:
        case "max_input_tokens_per_session":
            value: float | int | None = limits.max_input_tokens_per_session
        case "max_output_tokens_per_session":
            value = limits.max_output_tokens_per_session
        case "max_cost_usd_per_session":
            value = limits.max_cost_usd_per_session
        case _:
            assert_never(name)
    # str(): a float's shortest spelling, so 0.1 is 0.1 and not its binary expansion
    return None if value is None else Decimal(str(value))


def used(spend: Spend, name: LimitName) -> Decimal:
    """What counts toward ``name``: every input token (cached or not), output tokens, or the
    priced cost."""
    match name:
        case "max_input_tokens_per_session":
            # cache reads count too: a server that reports most of a prompt as cached
            # (llama.cpp's ``cached_tokens``) must not slip past an input limit, and a model
            # with no price can only be bounded by its tokens
            return Decimal(spend.usage.total_input_tokens)
        case "max_output_tokens_per_session":
            return Decimal(spend.usage.output_tokens)
        case "max_cost_usd_per_session":
            # an unpriced model's share is unknown; the priced part is what can be counted
            return spend.cost.usd or Decimal(0)
        case _:
            assert_never(name)


def allowed(limits: Limits, raised: Mapping[str, int], name: LimitName) -> Decimal | None:
    """The limit with the session's raises: the configured amount once per raise, plus one."""
    base = configured(limits, name)
    return None if base is None else base * (1 + raised.get(name, 0))


def crossed(
    limits: Limits, raised: Mapping[str, int], spend: Spend, step: int
) -> LimitCrossed | None:
    """The first limit ``spend`` has reached, if any."""
    for name in LIMIT_NAMES:
        base = configured(limits, name)
        cap = allowed(limits, raised, name)
        if base is None or cap is None:
            continue
        total = used(spend, name)
        if total >= cap:
            return LimitCrossed(
                limit=name,
                used=total,
                allowed=cap,
                raise_by=base,
                times_raised=raised.get(name, 0),
                step=step,
                spend=spend,
            )
    return None


def limit_reached(crossing: LimitCrossed) -> SessionLimitReached:
    """The error of a crossed limit no one is here to raise (``eve run``, a bare turn)."""
    spend = crossing.spend
    return SessionLimitReached(
        f"the session reached {crossing.limit}: {crossing.used} used of "
        f"{crossing.allowed} allowed (input {spend.usage.total_input_tokens} tokens, "
        f"output {spend.usage.output_tokens} tokens, cost "
        f"{_usd(spend)}); no one is here to raise it",
        limit=crossing.limit,
        used=crossing.used,
        allowed=crossing.allowed,
    )


def _usd(spend: Spend) -> str:
    usd = spend.cost.usd
    return "price unknown" if usd is None else f"${usd}"
