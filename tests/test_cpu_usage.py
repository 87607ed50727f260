"""The suite's measuring tools: ``-p tests.cpu_usage`` writes each process's CPU by test
module, and ``scripts/cpu-of`` waits for a command's orphans and passes on its status."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.cpu_usage import summarize

CPU_OF = REPO_ROOT / "scripts" / "cpu-of"


def test_each_module_gets_its_cpu_and_the_summary_sums_them(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        test_one="def test_a():\n    sum(range(10_000))\n",
        test_two="def test_b():\n    pass\n\ndef test_c():\n    pass\n",
    )
    figures = tmp_path / "cpu"
    monkeypatch.setenv("EVE_TEST_CPU_DIR", str(figures))
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))  # the plugin is tests.cpu_usage
    pytester.runpytest_subprocess("-p", "tests.cpu_usage", "-p", "no:xdist").assert_outcomes(
        passed=3
    )
    (written,) = figures.glob("*.json")
    modules = json.loads(written.read_text())["modules"]
    assert sorted(modules) == ["test_one.py", "test_two.py"]
    assert all(len(values) == 3 and min(values) >= 0 for values in modules.values())
    summary = summarize(figures)
    assert "before the first test" in summary
    assert summary.count("test_one.py") == summary.count("test_two.py") == 1


def test_cpu_of_waits_for_an_orphan_and_passes_the_status_on(tmp_path: Path) -> None:
    left = tmp_path / "orphan-done"
    # the orphan outlives the shell that started it, then writes its file
    script = (
        f"({sys.executable} -c 'import time, pathlib; time.sleep(0.5); "
        f'pathlib.Path("{left}").touch()\' &); exit 3'
    )
    done = subprocess.run(
        [sys.executable, str(CPU_OF), "bash", "-c", script],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 3
    assert left.exists(), done.stderr
    assert "CPU-s" in done.stderr and "exit 3" in done.stderr
    assert "still running" not in done.stderr


def test_cpu_of_without_a_command_says_how_to_use_it() -> None:
    done = subprocess.run(
        [sys.executable, str(CPU_OF)], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 2
    assert "usage: scripts/cpu-of COMMAND" in done.stderr
