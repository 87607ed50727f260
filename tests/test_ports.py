"""The ports the tests' servers take (``tests/ports.py``): each xdist worker chooses in a slice
of its own, so no two workers can choose one port between its probe and its bind, and a
process never hands out a port again soon after."""

from __future__ import annotations

import itertools
import socket
from collections import deque

import pytest

from tests import ports
from tests.ports import free_port, worker_slice


def test_the_workers_slices_are_apart_and_cover_the_range() -> None:
    slices = [worker_slice(f"gw{n}", 6, 20_000, 32_767) for n in range(6)]
    assert slices[0][0] == 20_000 and slices[-1][1] <= 32_767
    for (_, end), (start, _) in itertools.pairwise(slices):
        assert start == end + 1
    assert all(end - start + 1 == 12_768 // 6 for start, end in slices)


def test_outside_xdist_the_whole_range_is_chosen_from() -> None:
    assert worker_slice("", 1, 20_000, 32_767) == (20_000, 32_767)
    assert worker_slice("master", 6, 20_000, 32_767) == (20_000, 32_767)
    assert worker_slice("gw2", 1, 20_000, 32_767) == (20_000, 32_767)


def test_a_worker_chooses_in_its_slice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw4")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "6")
    start, end = worker_slice("gw4", 6, ports._LOWEST, ports._ephemeral_start() - 1)
    assert all(start <= free_port() <= end for _ in range(5))


def test_a_port_handed_out_lately_is_not_handed_out_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first, second = _two_free_ports()
    picks = iter([first, first, second])
    monkeypatch.setattr(ports.random, "randint", lambda *_: next(picks))
    monkeypatch.setattr(ports, "_handed", deque(maxlen=256))
    assert free_port() == first
    # ``first`` is still free (nothing bound it): only the memory passes it over
    assert free_port() == second


def _two_free_ports() -> tuple[int, int]:
    with socket.socket() as one, socket.socket() as two:
        one.bind(("127.0.0.1", 0))
        two.bind(("127.0.0.1", 0))
        return one.getsockname()[1], two.getsockname()[1]
