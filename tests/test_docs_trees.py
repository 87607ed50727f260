"""The directory trees of the docs are the example agent's: every path a tree of ``agent/``
names exists in this repository, and every path a tree of ``.eve/`` names exists after
``eve compile`` of a copy of it; the overview trees (the README's, docs/layout.md's) leave
out no entry of ``agent/`` or of what the compile writes.

A tree is a text block whose root line is ``agent/`` or ``.eve/``; each entry is
``├── name`` or ``└── name`` under 4 columns per level, then a comment after the name.
The README draws its two trees side by side: the ``.eve/`` one starts in the column of
``.eve/`` on the first line.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.test_docs import fenced_blocks
from tests.test_docs_outputs import run_eve

REPO_ROOT = Path(__file__).resolve().parent.parent
ENTRY = re.compile(r"^((?:[│ ]   )*)[├└]── (\S+)")
#: files the walk leaves out: Python's caches, written by whatever imported the agent
NOT_SOURCES = {"__pycache__"}


def tree_paths(lines: list[str]) -> list[str]:
    """The paths a tree names, its root first (``agent/``, ``agent/tools/``, …); a path
    ending in ``/`` names a directory."""
    root = lines[0].split()[0]
    assert root.endswith("/"), f"tree root {lines[0]!r}"
    parents = [root]
    paths = [root]
    for line in lines[1:]:
        if not line.strip():
            continue
        entry = ENTRY.match(line)
        assert entry is not None, f"tree line {line!r}"
        depth = len(entry[1]) // 4
        del parents[depth + 1 :]
        # ``tools/get_price.py`` on one line names the directory too
        *dirs, _ = entry[2].rstrip("/").split("/")
        paths += [
            parents[depth] + "".join(d + "/" for d in dirs[: i + 1]) for i in range(len(dirs))
        ]
        path = parents[depth] + entry[2]
        paths.append(path)
        if path.endswith("/"):
            parents.append(path)
    return paths


def readme_trees() -> list[list[str]]:
    [block] = [b for b in fenced_blocks(REPO_ROOT / "README.md") if b.body.startswith("agent/")]
    lines = block.body.rstrip("\n").splitlines()
    column = lines[0].index(".eve/")
    return [[line[:column] for line in lines], [line[column:] for line in lines]]


def is_tree(lines: list[str], root: str) -> bool:
    """A root line, ``root`` alone or with a comment, then an entry (not a diagram)."""
    return (
        len(lines) > 1
        and re.match(rf"^{re.escape(root)}(  |$)", lines[0]) is not None
        and ENTRY.match(lines[1]) is not None
    )


def left_out(tree: list[str], real: set[str]) -> list[str]:
    """What is in ``real`` and not in the tree: a directory the tree names without entries
    under it stands for what it holds."""
    leaves = [
        p for p in tree if p.endswith("/") and not any(o.startswith(p) and o != p for o in tree)
    ]
    named = set(tree)
    return sorted(p for p in real if p not in named and not any(p.startswith(d) for d in leaves))


def doc_trees(root: str) -> dict[str, list[str]]:
    """Every tree of ``root`` in README.md and docs/*.md, as ``page#n`` (its n-th tree)."""
    found: dict[str, list[str]] = {}
    for i, tree in enumerate(readme_trees()):
        if tree[0].startswith(root):
            found[f"README.md#{i}"] = tree_paths(tree)
    for page in sorted((REPO_ROOT / "docs").glob("*.md")):
        blocks = [b.body.rstrip("\n").splitlines() for b in fenced_blocks(page) if b.lang == "text"]
        for i, lines in enumerate(b for b in blocks if is_tree(b, root)):
            found[f"docs/{page.name}#{i}"] = tree_paths(lines)
    return found


def on_disk(base: Path, top: str) -> set[str]:
    """The paths under ``base / top`` in the trees' spelling: directories end in ``/``."""
    paths = {top}
    for path in (base / top).rglob("*"):
        if NOT_SOURCES & set(path.parts):
            continue
        rel = path.relative_to(base).as_posix()
        paths.add(rel + "/" if path.is_dir() else rel)
    return paths


def top_level(paths: set[str], root: str) -> set[str]:
    return {p for p in paths if p != root and "/" not in p.removeprefix(root).rstrip("/")}


def test_every_tree_of_agent_names_paths_that_exist() -> None:
    trees = doc_trees("agent/")
    assert {"README.md#0", "docs/layout.md#0"} <= trees.keys(), sorted(trees)
    real = on_disk(REPO_ROOT, "agent/")
    for where, paths in trees.items():
        assert sorted(set(paths) - real) == [], f"{where} names what agent/ does not have"


def test_the_overview_trees_list_every_entry_of_agent() -> None:
    real = on_disk(REPO_ROOT, "agent/")
    trees = doc_trees("agent/")
    readme = set(trees["README.md#0"])
    assert sorted(top_level(real, "agent/") - readme) == [], "README.md leaves out"
    # layout.md's tree is the example agent, file by file
    assert left_out(trees["docs/layout.md#0"], real) == [], "docs/layout.md leaves out"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the example agent, compiled from nothing."""
    root = tmp_path_factory.mktemp("compiled")
    for name in ("agent", "examples"):
        shutil.copytree(REPO_ROOT / name, root / name, ignore=shutil.ignore_patterns(*NOT_SOURCES))
    printed = run_eve(["compile"], root)
    assert "eve: compiled agent/ → .eve/" in printed, printed
    return root


def test_the_tree_of_eve_is_what_a_compile_writes(compiled: Path) -> None:
    trees = doc_trees(".eve/")
    assert trees.keys() == {"README.md#1"}
    real = on_disk(compiled, ".eve/")
    assert sorted(set(trees["README.md#1"]) - real) == [], "README.md names what is not there"
    assert left_out(trees["README.md#1"], real) == [], "README.md leaves out"


def test_a_tree_line_reads_as_a_path() -> None:
    lines = ["agent/   comment", "├── tools/   x", "│   └── a.py", "└── lib/", "    └── b/c.py  y"]
    assert tree_paths(lines) == [
        "agent/",
        "agent/tools/",
        "agent/tools/a.py",
        "agent/lib/",
        "agent/lib/b/",
        "agent/lib/b/c.py",
    ]
