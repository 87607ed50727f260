"""The controller's rewrite of the test modules (tests/rewrite_ahead.py) leaves the cache that
pytest's own loader reads back, and rewrites nothing twice."""

from __future__ import annotations

import pytest
from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc

from tests.rewrite_ahead import rewrite_ahead, rewritten_files, should_rewrite_ahead


def test_the_cache_written_ahead_is_the_one_pytest_reads(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    test_file = pytester.makepyfile(test_sums="def test_sum():\n    assert 1 + 1 == 2\n")
    # not at the root: configuring would load (and cache) that one before the rewrite ahead
    pytester.mkpydir("sub").joinpath("conftest.py").write_text("")
    pytester.makepyfile(helper="VALUE = 1\n", test_broken="def test_(:\n")
    config = pytester.parseconfigure(pytester.path)
    names = sorted(file.name for file in rewritten_files(config))
    assert names == ["conftest.py", "test_broken.py", "test_sums.py"], "helpers are not rewritten"

    assert rewrite_ahead(config) == 2, "the file that does not parse is left to its worker"
    pyc = test_file.parent / "__pycache__" / f"test_sums{PYC_TAIL}"
    code = _read_pyc(test_file, pyc)
    assert code is not None and "@pytest_ar" in code.co_names, "the asserts are rewritten"
    assert rewrite_ahead(config) == 0, "a current cache is not written again"

    test_file.write_text("def test_sum():\n    assert 2 + 2 == 4\n")
    assert rewrite_ahead(config) == 1, "a changed module is rewritten"
    assert not should_rewrite_ahead(config), "without xdist's controller, nothing runs ahead"
