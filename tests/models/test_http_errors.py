"""Provider failures become eve's model errors, with the wait the provider asked for."""

from __future__ import annotations

import time
from email.utils import formatdate

import pytest

from eve.errors import ModelAuthError, ModelHTTPError, ModelRateLimited
from eve.models._http_errors import retry_after_seconds, status_error


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "1"}, 1.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "-3"}, None),
        ({}, None),
    ],
)
def test_the_wait_the_provider_asks_for(headers: dict[str, str], seconds: float | None) -> None:
    assert retry_after_seconds(headers) == seconds


def test_a_retry_after_date_is_a_wait_from_now() -> None:
    wait = retry_after_seconds({"retry-after": formatdate(time.time() + 30, usegmt=True)})
    assert wait is not None and 25 < wait <= 30


def test_status_errors_carry_status_and_wait_and_never_the_key() -> None:
    key = "sk-ant-api03-" + "x" * 40
    limited = status_error(
        "anthropic", 429, f"slow down {key}", secret=key, headers={"retry-after": "2"}
    )
    assert isinstance(limited, ModelRateLimited)
    assert (limited.status, limited.retry_after, limited.provider) == (429, 2.0, "anthropic")
    assert key not in str(limited)
    refused = status_error("openai", 401, "bad key", secret=None)
    assert isinstance(refused, ModelAuthError) and refused.retry_after is None
    overloaded = status_error("anthropic", 529, "overloaded_error: Overloaded", secret=None)
    assert type(overloaded) is ModelHTTPError and overloaded.status == 529
