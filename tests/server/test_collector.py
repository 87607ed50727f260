"""A worker's garbage collector (``eve/server/collector.py``): the setting read, the heap
frozen and full collections made rarer, or nothing at all when it is off."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from eve.cli import main
from eve.errors import ServerConfigError
from eve.server.collector import (
    DEFAULT_FULL_THRESHOLD,
    FULL_THRESHOLD_ENV,
    MIDDLE_THRESHOLD,
    full_threshold,
    tune_collector,
)
from tests.conftest import AppFactory


@pytest.fixture
def collector() -> Iterator[None]:
    """A heap thawed for the test, and the test process's collector as it was afterwards:
    tests/conftest.py froze what collecting imported, and the rest of this xdist worker's
    tests would otherwise walk all of it again at every full collection."""
    thresholds = gc.get_threshold()
    frozen = gc.get_freeze_count()
    gc.unfreeze()  # the test counts what tune_collector freezes, from nothing
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
        if frozen:
            # gc has no way back to just the objects frozen before: this freezes them and
            # what the worker made since, as conftest's freeze did (no full collection
            # first: on a heap holding the whole suite it costs more than it would free)
            gc.freeze()


def test_the_setting_is_eves_default_a_number_or_off() -> None:
    assert full_threshold({}) == DEFAULT_FULL_THRESHOLD
    assert full_threshold({FULL_THRESHOLD_ENV: " "}) == DEFAULT_FULL_THRESHOLD
    assert full_threshold({FULL_THRESHOLD_ENV: "25"}) == 25
    assert full_threshold({FULL_THRESHOLD_ENV: "OFF"}) is None


@pytest.mark.parametrize("raw", ["0", "-3", "ten", "1.5", "²"])
def test_a_threshold_eve_cannot_read_is_named(raw: str) -> None:
    with pytest.raises(ServerConfigError, match=f"{FULL_THRESHOLD_ENV} must be a whole number"):
        full_threshold({FULL_THRESHOLD_ENV: raw})


def test_tuning_freezes_the_heap_and_spaces_full_collections(collector: None) -> None:
    young, middle, _ = gc.get_threshold()
    alive = [object() for _ in range(10)]  # what a started worker holds
    tune_collector(40)
    if sys.version_info < (3, 14):
        middle = MIDDLE_THRESHOLD
    assert gc.get_threshold() == (young, middle, 40)
    assert gc.get_freeze_count() > len(alive)


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="3.14's collector is incremental")
def test_the_middle_generation_goes_at_every_other_young_collection(collector: None) -> None:
    """What outlives one young collection is walked at the next and then left to the full
    ones (``gc.callbacks`` name each generation collected)."""
    tune_collector(DEFAULT_FULL_THRESHOLD)
    collected: list[int] = []

    def note(phase: str, info: dict[str, int]) -> None:
        if phase == "stop":
            collected.append(info["generation"])

    gc.callbacks.append(note)
    try:
        kept: list[list[object]] = []
        while len(collected) < 6:
            kept.append([])  # a container outliving young collections, as a turn's do
    finally:
        gc.callbacks.remove(note)
    assert collected[:6] in ([0, 1] * 3, [1, 0] * 3)


def test_off_leaves_the_collector_as_it_was(collector: None) -> None:
    thresholds = gc.get_threshold()
    tune_collector(None)
    assert gc.get_threshold() == thresholds
    assert gc.get_freeze_count() == 0


def test_eve_serve_refuses_a_threshold_it_cannot_read(make_app: AppFactory) -> None:
    root = make_app()
    result = CliRunner().invoke(main, ["-C", str(root), "serve"], env={FULL_THRESHOLD_ENV: "0"})
    assert result.exit_code == 2, result.output
    assert f"{FULL_THRESHOLD_ENV} must be a whole number" in result.output
