"""eve compile --check: fresh/stale without importing authored code."""

from __future__ import annotations

from pathlib import Path

from eve.artifacts import check_artifacts
from eve.compiler import compile_to_disk
from eve.manifest import MANIFEST_PATH
from tests.conftest import AppFactory

MARKING_TOOL = """
from pathlib import Path
Path(__file__).with_name("imported.marker").write_text("yes")
from eve.tools import tool
@tool
def mark() -> str:
    'Mark.'
    return "m"
"""


def fresh_app(make_app: AppFactory) -> Path:
    root = make_app({"agent/tools/mark.py": MARKING_TOOL, "agent/lib/util.py": "X = 1\n"})
    compile_to_disk(root)
    (root / "agent/tools/imported.marker").unlink()
    return root


def test_fresh_artifacts_pass_and_nothing_is_imported(make_app: AppFactory) -> None:
    root = fresh_app(make_app)
    report = check_artifacts(root)
    assert report.fresh
    assert not (root / "agent/tools/imported.marker").exists()


def test_edits_additions_and_removals_are_listed(make_app: AppFactory) -> None:
    root = fresh_app(make_app)
    (root / "agent/lib/util.py").write_text("X = 2\n")
    (root / "agent/tools/new_tool.py").write_text(MARKING_TOOL)
    (root / "agent/instructions.md").unlink()
    report = check_artifacts(root)
    assert not report.fresh
    assert report.changed == ["agent/lib/util.py"]
    assert report.added == ["agent/tools/new_tool.py"]
    assert report.removed == ["agent/instructions.md"]
    assert report.problems == []
    assert not (root / "agent/tools/imported.marker").exists()


def test_recompiling_makes_it_fresh_again(make_app: AppFactory) -> None:
    root = fresh_app(make_app)
    (root / "agent/lib/util.py").write_text("X = 3\n")
    assert not check_artifacts(root).fresh
    compile_to_disk(root)
    (root / "agent/tools/imported.marker").unlink()  # this tool writes it when imported
    assert check_artifacts(root).fresh


def test_hand_edited_or_missing_artifacts_are_problems(make_app: AppFactory) -> None:
    root = fresh_app(make_app)
    manifest = root / MANIFEST_PATH
    manifest.write_bytes(manifest.read_bytes().replace(b'"Mark."', b'"Edited."'))
    report = check_artifacts(root)
    assert report.problems == [f"{MANIFEST_PATH} was changed after it was compiled"]
    manifest.unlink()
    assert check_artifacts(root).problems == [f"{MANIFEST_PATH} is missing"]


def test_never_compiled(make_app: AppFactory) -> None:
    report = check_artifacts(make_app())
    assert not report.fresh
    assert report.problems == [
        ".eve/compile/compile-metadata.json is missing",
        ".eve/discovery/agent-discovery-manifest.json is missing",
    ]
