"""Which failed model calls are tried again, and how long to wait first (pure; no I/O).

The statuses are the ones both official SDKs retry on their own (``_should_retry`` in the
``anthropic`` and ``openai`` clients: 408 request timeout, 409 lock timeout, 429 rate
limit, every 5xx, 529 overloaded included) and the backoff is theirs too (0.5 s doubling,
up to a quarter of it taken off at random, a ``retry-after`` obeyed as given). eve runs the
loop itself rather than leaving it to the SDKs (see ``_streaming.SDKModel.stream``), so
this module keeps their rules in one place instead of inventing others.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from eve.errors import ModelConnectionError, ModelError, ModelHTTPError
from eve.manifest import Retries

#: the first backoff, doubled for each further retry (the SDKs' ``INITIAL_RETRY_DELAY``)
INITIAL_DELAY = 0.5
#: statuses below 500 worth another try: request timeout, lock timeout, rate limit
_RETRYABLE_BELOW_500 = frozenset({408, 409, 429})


def is_transient(error: ModelError) -> bool:
    """Whether the same request may well succeed if sent again.

    An error status the SDKs retry, and a connection that failed or was cut off (before
    the first event or in the middle of the stream). Anthropic's ``error`` event inside a
    200 stream arrives here as its status (``overloaded_error`` as 529), so it is judged
    like the same error sent as a response. Refusals (400, 401, 403, 404, 413), protocol
    violations and failures without a status are not: sending them again changes nothing.
    """
    if isinstance(error, ModelHTTPError):
        return error.status in _RETRYABLE_BELOW_500 or error.status >= 500
    return isinstance(error, ModelConnectionError)


@dataclass(frozen=True, kw_only=True)
class Wait:
    """Try again after ``seconds``."""

    seconds: float


@dataclass(frozen=True, kw_only=True)
class GiveUp:
    """Stop trying. ``why`` says why retrying ended, for ``ModelRetriesExhausted``; None
    when there was nothing to retry (a permanent failure, or retries turned off), and the
    call fails with its error as it came."""

    why: str | None


def next_try(
    error: ModelError,
    *,
    retry: int,
    policy: Retries,
    jitter: Callable[[], float] = random.random,
) -> Wait | GiveUp:
    """What to do after the try before retry number ``retry`` (1 for the first) failed.

    A ``retry-after`` the provider sent is waited as given; one longer than
    ``policy.max_delay_seconds`` is not shortened (a try before the provider is ready
    fails again) but ends the retries. Without one the wait is exponential backoff capped
    at ``policy.max_delay_seconds``, less up to a quarter at random, so that clients which
    failed together do not all come back at the same instant.
    """
    if not is_transient(error) or policy.attempts == 1:
        return GiveUp(why=None)
    if retry >= policy.attempts:
        return GiveUp(why=f"all {policy.attempts} attempts failed")
    asked = error.retry_after if isinstance(error, ModelHTTPError) else None
    if asked is not None:
        if asked > policy.max_delay_seconds:
            return GiveUp(
                why=f"the provider asked to wait {asked:g}s, longer than "
                f"retries.max_delay_seconds ({policy.max_delay_seconds:g}s)"
            )
        return Wait(seconds=asked)
    backoff = min(INITIAL_DELAY * 2.0 ** (retry - 1), policy.max_delay_seconds)
    return Wait(seconds=backoff * (1 - 0.25 * jitter()))
