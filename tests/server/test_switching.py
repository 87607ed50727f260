"""A worker's thread switch interval (``eve/server/switching.py``): the setting read and
applied, or left alone when it is off."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from eve.cli import main
from eve.errors import ServerConfigError
from eve.server.switching import (
    DEFAULT_SWITCH_MS,
    POSTGRES_SWITCH_MS,
    SWITCH_ENV,
    switch_interval_ms,
    tune_switching,
)
from tests.conftest import AppFactory


@pytest.fixture
def interval() -> Iterator[float]:
    """The test process's interval, restored afterwards."""
    before = sys.getswitchinterval()
    try:
        yield before
    finally:
        sys.setswitchinterval(before)


def test_the_setting_is_eves_default_milliseconds_or_off() -> None:
    assert switch_interval_ms({}) == DEFAULT_SWITCH_MS
    assert switch_interval_ms({SWITCH_ENV: "2.5"}) == 2.5
    assert switch_interval_ms({SWITCH_ENV: " Off "}) is None


def test_on_postgresql_the_default_is_its_own_and_the_setting_still_wins() -> None:
    # no single writer there: the loop, asked to let go every 1 ms, waited behind a dozen
    # pool threads (switching.py)
    assert switch_interval_ms({}, postgres=True) == POSTGRES_SWITCH_MS == 2.0
    assert POSTGRES_SWITCH_MS != DEFAULT_SWITCH_MS
    assert switch_interval_ms({SWITCH_ENV: ""}, postgres=True) == POSTGRES_SWITCH_MS
    assert switch_interval_ms({SWITCH_ENV: "1"}, postgres=True) == 1.0
    assert switch_interval_ms({SWITCH_ENV: "off"}, postgres=True) is None


@pytest.mark.parametrize("raw", ["0", "-1", "101", "nan", "inf", "fast", "١"])
def test_an_interval_eve_cannot_read_is_named(raw: str) -> None:
    with pytest.raises(ServerConfigError, match=f"{SWITCH_ENV} must be a number"):
        switch_interval_ms({SWITCH_ENV: raw})


def test_tuning_sets_the_interval_and_off_leaves_it(interval: float) -> None:
    tune_switching(2.0)
    assert sys.getswitchinterval() == pytest.approx(0.002)
    tune_switching(None)
    assert sys.getswitchinterval() == pytest.approx(0.002)


def test_eve_serve_refuses_an_interval_it_cannot_read(make_app: AppFactory) -> None:
    root = make_app()
    result = CliRunner().invoke(main, ["-C", str(root), "serve"], env={SWITCH_ENV: "0"})
    assert result.exit_code == 2, result.output
    assert f"{SWITCH_ENV} must be a number" in result.output
