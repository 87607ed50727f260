"""The pause between a channel delivery's tries (``EVE_DELIVERY_RETRY_SECONDS``): read,
refused when eve cannot read it, and given to DBOS as the step's first pause."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from eve.cli import main
from eve.errors import ServerConfigError
from eve.schedules.tick import (
    DEFAULT_RETRY_SECONDS,
    DELIVERY_ATTEMPTS,
    RETRY_ENV,
    delivery_retry_seconds,
    delivery_step,
)
from tests.conftest import AppFactory


def test_the_setting_is_dboss_default_or_a_number_of_seconds() -> None:
    assert delivery_retry_seconds({}) == DEFAULT_RETRY_SECONDS == 1.0
    assert delivery_retry_seconds({RETRY_ENV: " "}) == DEFAULT_RETRY_SECONDS
    assert delivery_retry_seconds({RETRY_ENV: "0.05"}) == 0.05


@pytest.mark.parametrize("raw", ["0", "-1", "601", "nan", "inf", "soon", "١"])
def test_a_pause_eve_cannot_read_is_named(raw: str) -> None:
    with pytest.raises(ServerConfigError, match=f"{RETRY_ENV} must be a number of seconds"):
        delivery_retry_seconds({RETRY_ENV: raw})


def test_the_step_tries_four_times_doubling_the_pause() -> None:
    step = delivery_step(0.25)
    assert (step["max_attempts"], step["interval_seconds"]) == (DELIVERY_ATTEMPTS, 0.25)
    assert (step["retries_allowed"], step["backoff_rate"]) == (True, 2.0)


def test_eve_serve_refuses_a_pause_it_cannot_read(make_app: AppFactory) -> None:
    root = make_app()
    result = CliRunner().invoke(main, ["-C", str(root), "serve"], env={RETRY_ENV: "soon"})
    assert result.exit_code == 2, result.output
    assert f"{RETRY_ENV} must be a number of seconds" in result.output
