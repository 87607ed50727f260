"""The retry rules on their own: which failures are transient, and how long to wait."""

from __future__ import annotations

import pytest

from eve.errors import (
    ModelAuthError,
    ModelConnectionError,
    ModelError,
    ModelHTTPError,
    ModelProtocolError,
    ModelRateLimited,
)
from eve.manifest import Retries
from eve.models._retry import GiveUp, Wait, is_transient, next_try


def http(status: int, retry_after: float | None = None) -> ModelHTTPError:
    return ModelHTTPError("x", provider="p", status=status, retry_after=retry_after)


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 529])
def test_the_sdks_retryable_statuses_are_transient(status: int) -> None:
    assert is_transient(http(status))


@pytest.mark.parametrize(
    "error",
    [
        http(400),
        http(404),
        http(413),
        ModelAuthError("x", provider="p", status=401),
        ModelProtocolError("bad index"),
        ModelError("no status"),
    ],
)
def test_refusals_and_protocol_errors_are_not(error: ModelError) -> None:
    assert not is_transient(error)
    assert next_try(error, retry=1, policy=Retries()) == GiveUp(why=None)


def test_backoff_doubles_up_to_the_cap_less_up_to_a_quarter() -> None:
    policy = Retries(attempts=10, max_delay_seconds=3)
    lost = ModelConnectionError("cut", provider="p")
    full = [next_try(lost, retry=n, policy=policy, jitter=lambda: 0.0) for n in (1, 2, 3, 4)]
    assert full == [Wait(seconds=0.5), Wait(seconds=1.0), Wait(seconds=2.0), Wait(seconds=3.0)]
    least = next_try(lost, retry=2, policy=policy, jitter=lambda: 1.0)
    assert least == Wait(seconds=0.75)


def test_retry_after_is_obeyed_as_given_or_ends_the_retries() -> None:
    policy = Retries(attempts=4, max_delay_seconds=10)
    limited = ModelRateLimited("x", provider="p", status=429, retry_after=7)
    assert next_try(limited, retry=1, policy=policy, jitter=lambda: 1.0) == Wait(seconds=7)
    too_long = ModelRateLimited("x", provider="p", status=429, retry_after=60)
    decision = next_try(too_long, retry=1, policy=policy)
    assert isinstance(decision, GiveUp) and decision.why is not None
    assert "asked to wait 60s" in decision.why


def test_the_last_attempt_gives_up_and_one_attempt_means_no_retrying() -> None:
    overloaded = http(529)
    last = next_try(overloaded, retry=3, policy=Retries(attempts=3))
    assert last == GiveUp(why="all 3 attempts failed")
    assert next_try(overloaded, retry=1, policy=Retries(attempts=1)) == GiveUp(why=None)
