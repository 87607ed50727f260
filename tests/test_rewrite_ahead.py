"""The controller's rewrite of the test modules (tests/rewrite_ahead.py) leaves the cache that
pytest's own loader reads back, and rewrites nothing twice."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc

import tests.rewrite_ahead
from tests.rewrite_ahead import (
    compile_ahead,
    rewrite_ahead,
    rewritten_files,
    should_rewrite_ahead,
)


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


def test_the_other_modules_are_compiled_once_as_the_import_would(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    # a name of its own: the repository's bench may be imported in this process already
    monkeypatch.setattr(tests.rewrite_ahead, "COMPILED_AHEAD", ("ahead_package",))
    package = pytester.mkpydir("ahead_package")
    helper = package / "helper.py"
    helper.write_text("VALUE = 1\n")
    (package / "test_kept.py").write_text("def test_():\n    pass\n")
    (package / "broken.py").write_text("def (:\n")
    config = pytester.parseconfigure(pytester.path)

    assert compile_ahead(config) == 2, "the helper and the package; not the test, not the broken"
    cached = Path(importlib.util.cache_from_source(str(helper)))
    written = cached.stat().st_mtime_ns
    assert not Path(importlib.util.cache_from_source(str(package / "test_kept.py"))).exists()
    assert compile_ahead(config) == 0, "a current cache is not written again"

    monkeypatch.syspath_prepend(str(pytester.path))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    module = importlib.import_module("ahead_package.helper")
    assert module.VALUE == 1
    assert cached.stat().st_mtime_ns == written, "the import took the cache as current"

    helper.write_text("VALUE = 22\n")  # a change of size, as the import's check sees it
    assert compile_ahead(config) == 1, "a changed module is compiled again"
