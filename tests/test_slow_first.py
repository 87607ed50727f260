"""The slow-first order deals the slow tests to the heads of the workers' shares."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import pytest

from tests.slow_first import SLOW, ordered


@dataclass
class _Item:
    nodeid: str


def _items(nodeids: list[str]) -> list[pytest.Item]:
    return cast(list[pytest.Item], [_Item(n) for n in nodeids])


def test_each_share_starts_with_its_slow_tests_and_nothing_is_lost() -> None:
    slow = {f"tests/test_s{n}.py::test_slow": 10.0 - n for n in range(6)}
    quick = [f"tests/test_x.py::test_{n}" for n in range(34)]
    items = _items([*quick[:20], *slow, *quick[20:]])
    result = [i.nodeid for i in ordered(items, workers=4, slow=slow)]
    assert sorted(result) == sorted([*quick, *slow])
    shares = [result[0:10], result[10:20], result[20:30], result[30:40]]
    # longest first, each to the share with the least slow time so far
    assert [s[0] for s in shares] == [*slow][:4]
    assert shares[3][1] == [*slow][4]  # the share that had the least
    assert sorted(s[1] for s in shares if s[1] in slow) == sorted([*slow][4:])
    assert [n for n in result if n in quick] == quick  # the rest keep their order


def test_a_module_with_slow_tests_moves_whole_in_its_order() -> None:
    # a module-scoped fixture is set up once per run of the module's tests in a row
    module = [f"tests/test_ui.py::test_{n}" for n in range(4)]
    slow = {module[1]: 5.0, module[3]: 4.0, "tests/test_y.py::test_alone": 6.0}
    quick = [f"tests/test_x.py::test_{n}" for n in range(11)]
    items = _items(quick[:5] + module + quick[5:] + ["tests/test_y.py::test_alone"])
    result = [i.nodeid for i in ordered(items, workers=2, slow=slow)]
    # 9 s of slow tests in one module go first, whole; the 6 s test leads the other share
    assert result[:8] == [*module, *quick[:4]]
    assert result[8:] == ["tests/test_y.py::test_alone", *quick[4:]]


def test_one_process_keeps_the_collected_order() -> None:
    items = _items([*SLOW][::-1])
    assert ordered(items, workers=1) == items


def test_a_module_sharing_a_fixture_runs_whole_behind_the_slow_ones_never_last() -> None:
    # a share's last tests are the ones stolen: there a module sharing a fixture would be
    # split, and its fixture set up again on the worker that stole part of it
    slow = {"tests/test_s.py::test_slow": 9.0}
    shared = [f"tests/test_m.py::test_{n}" for n in range(3)]
    quick = [f"tests/test_x.py::test_{n}" for n in range(6)]
    items = _items([*quick[:3], *shared, *quick[3:], *slow])
    result = [
        i.nodeid
        for i in ordered(items, workers=2, slow=slow, shared=frozenset({"tests/test_m.py"}))
    ]
    assert sorted(result) == sorted(i.nodeid for i in items)
    # the slow test leads the first share; the module goes whole to the share with more room
    assert result[:5] == [*slow, *quick[:4]]
    assert result[5:] == [*shared, *quick[4:]]
    # otherwise the module is split at the shares' boundary
    plain = [i.nodeid for i in ordered(items, workers=2, slow=slow)]
    assert (plain[4], plain[5:7]) == (shared[0], shared[1:])
