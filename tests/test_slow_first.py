"""The slow-first order deals the slow tests to the heads of the workers' shares."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import pytest

from tests.slow_first import SLOW, ordered


@dataclass
class _Item:
    nodeid: str


def test_each_share_starts_with_its_slow_tests_and_nothing_is_lost() -> None:
    slow = sorted(SLOW, key=lambda nodeid: -SLOW[nodeid])[:6]
    quick = [f"tests/test_x.py::test_{n}" for n in range(34)]
    items = cast(Any, [_Item(n) for n in quick[:20] + slow + quick[20:]])
    result = [i.nodeid for i in ordered(cast(list[pytest.Item], items), workers=4)]
    assert sorted(result) == sorted(quick + slow)
    shares = [result[0:10], result[10:20], result[20:30], result[30:40]]
    # longest first, each to the share with the least slow time so far
    assert [s[0] for s in shares] == slow[:4]
    assert shares[3][1] == slow[4]  # the share that had the least
    assert sorted(s[1] for s in shares if s[1] in slow) == sorted(slow[4:])
    assert [n for n in result if n in quick] == quick  # the rest keep their order


def test_one_process_keeps_the_collected_order() -> None:
    items = cast(list[pytest.Item], [_Item(n) for n in [*SLOW][::-1]])
    assert ordered(items, workers=1) == items
