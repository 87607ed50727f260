"""The docs stay true to the code.

* every ```python block of docs/*.md runs (a page's blocks in order, in one namespace, in the
  repo root, so the example agent and its .eve/ are what they use); ```python no-run and
  ```text blocks are illustrations;
* a page with ```python server or ```sh server blocks gets what `eve serve` serves for a copy
  of the example agent on the offline model, on a loopback port, its URL in ``$EVE_URL``;
  its ```sh server blocks (curl examples) run in order as one bash script that must succeed;
* every ```console block's `$ eve ...` command (read-only ones only) prints the lines shown;
* every diagnostic code, error class, manifest Struct field and `eve info --json` field is
  documented, with the manifest's types and defaults as the code has them;
* relative links between pages (and their #anchors) resolve.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import pytest

import eve.errors
import eve.manifest
import eve.runtime.info
from tests.sessions.threaded import ThreadedServer

REPO_ROOT = Path(__file__).resolve().parent.parent
DOCS = REPO_ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
CORE_PAGES = ["index.md", "layout.md", "artifacts.md", "cli.md", "errors.md", "runtime.md"]
#: the only commands a console block may show: they read the artifacts and change nothing
READ_ONLY = [["compile", "--check"], ["info"], ["info", "--json"]]
ELISION = {"...", "…"}
CODE = re.compile(r'"((?:discover|compile)/[a-z-]+)"')


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    lang: str
    flags: str
    body: str


def fenced_blocks(page: Path) -> list[Block]:
    found: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = re.match(r"^```([\w-]*)(.*)$", lines[i])
        if opening is None:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == "```"), None)
        assert end is not None, f"{page.name}:{i + 1}: unclosed code fence"
        body = "\n".join(lines[i + 1 : end]) + "\n"
        found.append(Block(page.name, i + 1, opening[1], opening[2].strip(), body))
        i = end + 1
    return found


def runnable(page: Path) -> list[Block]:
    return [b for b in fenced_blocks(page) if b.lang == "python" and b.flags in ("", "server")]


def server_blocks(page: Path) -> list[Block]:
    return [b for b in fenced_blocks(page) if b.flags == "server"]


@contextmanager
def example_server(tmp: Path) -> Iterator[str]:
    """What ``eve serve --model offline/test`` serves, for a copy of the example agent (its
    own session database), on a free loopback port; yields the server's root URL. It runs
    in a thread of this process: nothing here needs the server to die."""
    root = tmp / "example"
    shutil.copytree(REPO_ROOT / "agent", root / "agent")
    shutil.copytree(
        REPO_ROOT / ".eve", root / ".eve", ignore=shutil.ignore_patterns("sessions", "*.sqlite*")
    )
    server = ThreadedServer(root, model="offline/test")
    try:
        yield server.start()
    finally:
        server.stop()


def section_table(text: str, heading: str) -> list[dict[str, str]]:
    """The first markdown table under ``heading`` (a full heading line), as rows of cells."""
    lines = text.splitlines()
    assert heading in lines, f"no section {heading!r}"
    rows: list[list[str]] = []
    for line in lines[lines.index(heading) + 1 :]:
        if line.startswith("#"):
            break
        if line.startswith("|"):
            rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
        elif rows:
            break
    assert len(rows) > 2, f"no table under {heading!r}"
    header = rows[0]
    return [dict(zip(header, row, strict=True)) for row in rows[2:]]


def plain(cell: str) -> str:
    return cell.replace("`", "").replace("\\|", "|").strip()


def slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


# --- the examples run ------------------------------------------------------------------------


def test_the_core_pages_exist_and_the_index_links_them() -> None:
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    for name in CORE_PAGES:
        assert (DOCS / name).is_file(), name
        assert f"]({name})" in index or name == "index.md", f"index.md does not link {name}"


@pytest.mark.parametrize("page", [p for p in PAGES if runnable(p)], ids=lambda p: p.name)
def test_python_examples_run(page: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(REPO_ROOT)
    monkeypatch.delenv("EVE_APP_ROOT", raising=False)
    namespace: dict[str, Any] = {"__name__": f"docs_{page.stem}"}
    with contextlib.ExitStack() as stack:
        if any(b.lang == "python" for b in server_blocks(page)):  # sh ones get their own
            monkeypatch.setenv("EVE_URL", stack.enter_context(example_server(tmp_path)))
        for block in runnable(page):
            code = compile(block.body, f"docs/{page.name}:{block.line}", "exec")
            exec(code, namespace)


@pytest.mark.parametrize(
    "page",
    [p for p in PAGES if any(b.lang == "sh" for b in server_blocks(p))],
    ids=lambda p: p.name,
)
def test_shell_examples_run_against_a_server(page: Path, tmp_path: Path) -> None:
    script = "".join(b.body for b in server_blocks(page) if b.lang == "sh")
    with example_server(tmp_path) as url:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=tmp_path,
            env={**os.environ, "EVE_URL": url},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert done.returncode == 0, (
        f"docs/{page.name}: the ```sh server examples failed:\n{done.stdout}{done.stderr}"
    )


def test_core_pages_have_runnable_examples() -> None:
    for name in CORE_PAGES:
        assert runnable(DOCS / name), f"{name} has no runnable ```python block"


def console_cases() -> list[Any]:
    cases = []
    for page in PAGES:
        for block in fenced_blocks(page):
            if block.lang != "console":
                continue
            lines = block.body.splitlines()
            for i, line in enumerate(lines):
                if not line.startswith("$ eve"):
                    continue
                shown = []
                for follow in lines[i + 1 :]:
                    if follow.startswith("$ "):
                        break
                    shown.append(follow.rstrip())
                where = block.line + 1 + i
                cases.append(
                    pytest.param(page.name, where, line[2:], shown, id=f"{page.name}:{where}")
                )
    return cases


def _subsequence(wanted: list[str], lines: list[str]) -> bool:
    it = iter(lines)
    return all(any(line == w for line in it) for w in wanted)


@pytest.mark.parametrize(("page", "line", "command", "shown"), console_cases())
def test_console_examples_print_what_they_show(
    page: str, line: int, command: str, shown: list[str]
) -> None:
    args = shlex.split(command)[1:]
    while args[:1] in (["-C"], ["--app-root"]):
        args = args[2:]
    assert args in READ_ONLY, (
        f"docs/{page}:{line}: `{command}` is not a read-only command; show it in a ```text "
        "block instead of ```console"
    )
    env = {k: v for k, v in os.environ.items() if k != "EVE_APP_ROOT"}
    done = subprocess.run(
        [sys.executable, "-m", "eve", *shlex.split(command)[1:]],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"docs/{page}:{line}: `{command}` failed:\n{done.stderr}"
    wanted = [s for s in shown if s.strip() and s.strip() not in ELISION]
    out, err = done.stdout.splitlines(), done.stderr.splitlines()
    assert _subsequence(wanted, out + err) or _subsequence(wanted, err + out), (
        f"docs/{page}:{line}: `{command}` does not print what the docs show.\n"
        f"shown:\n{chr(10).join(wanted)}\nreal:\n{done.stdout}{done.stderr}"
    )


# --- everything is documented ----------------------------------------------------------------


def compiler_codes() -> set[str]:
    source = "".join(
        p.read_text(encoding="utf-8") for p in sorted((REPO_ROOT / "eve/compiler").rglob("*.py"))
    )
    return set(CODE.findall(source))


def test_every_diagnostic_code_is_documented_with_a_severity() -> None:
    codes = compiler_codes()
    assert len(codes) > 20
    errors_md = (DOCS / "errors.md").read_text(encoding="utf-8")
    rows = {
        plain(cells[0]): plain(cells[1])
        for line in errors_md.splitlines()
        if line.startswith("| `discover/") or line.startswith("| `compile/")
        for cells in [[c.strip() for c in line.strip().split("|")[1:-1]]]
    }
    assert sorted(codes - rows.keys()) == [], "diagnostic codes missing from docs/errors.md"
    assert set(rows.values()) <= {"error", "warning"}


def test_every_documented_diagnostic_code_exists() -> None:
    codes = compiler_codes()
    for page in PAGES:
        documented = set(re.findall(r"`((?:discover|compile)/[a-z-]+)`", page.read_text("utf-8")))
        assert sorted(documented - codes) == [], f"docs/{page.name} names unknown codes"


def error_classes() -> dict[str, type[eve.errors.EveError]]:
    return {
        name: value
        for name, value in vars(eve.errors).items()
        if isinstance(value, type)
        and issubclass(value, eve.errors.EveError)
        and not name.startswith("_")
    }


def test_every_error_class_is_documented_with_its_code() -> None:
    errors_md = (DOCS / "errors.md").read_text(encoding="utf-8")
    table = {
        plain(r["class"]): plain(r["`code`"]) for r in section_table(errors_md, "## Exceptions")
    }
    classes = error_classes()
    assert sorted(classes.keys() - table.keys()) == [], "error classes missing from errors.md"
    assert sorted(table.keys() - classes.keys()) == [], "errors.md documents unknown classes"
    assert {name: cls.code for name, cls in classes.items()} == table


def test_the_error_tree_matches_the_classes() -> None:
    errors_md = DOCS / "errors.md"
    [tree] = [b for b in fenced_blocks(errors_md) if b.body.startswith("EveError\n")]
    parents: dict[str, str | None] = {}
    stack: list[str] = []
    for line in tree.body.splitlines():
        match = re.match(r"^((?:│   |    )*)(?:├── |└── )?(\w+)$", line)
        assert match, f"errors.md tree line {line!r}"
        depth = len(match[1]) // 4 + (0 if line.startswith("EveError") else 1)
        del stack[depth:]
        parents[match[2]] = stack[-1] if stack else None
        stack.append(match[2])
    actual = {
        name: next((b.__name__ for b in cls.__bases__ if issubclass(b, eve.errors.EveError)), None)
        for name, cls in error_classes().items()
    }
    assert parents == actual


def manifest_structs() -> dict[str, type[msgspec.Struct]]:
    return {
        name: value
        for name, value in vars(eve.manifest).items()
        if isinstance(value, type)
        and issubclass(value, msgspec.Struct)
        and value.__module__ == "eve.manifest"
        # a private base (``_Tool``) is documented through the entries that extend it
        and not name.startswith("_")
    }


def _annotation(cls: type, field: str) -> str:
    for klass in cls.__mro__:
        if field in getattr(klass, "__annotations__", {}):
            return str(klass.__annotations__[field])
    raise AssertionError(f"{cls.__name__}.{field} has no annotation")


def _default(field: msgspec.structs.FieldInfo) -> str:
    if field.required:
        return "required"
    if field.default_factory is not msgspec.NODEFAULT:
        return repr(field.default_factory())
    value = field.default
    if isinstance(value, msgspec.Struct):
        try:
            if value == type(value)():
                return f"{type(value).__name__}()"
        except TypeError:
            pass
        return repr(value).replace("'", '"')
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def _squash(text: str) -> str:
    return text.replace("'", '"').replace(" ", "")


def test_every_manifest_struct_and_field_is_documented() -> None:
    artifacts_md = (DOCS / "artifacts.md").read_text(encoding="utf-8")
    assert "`Base`" in artifacts_md
    for name, cls in manifest_structs().items():
        fields = msgspec.structs.fields(cls)
        if not fields:
            continue
        rows = {plain(r["field"]): r for r in section_table(artifacts_md, f"### `{name}`")}
        config = cls.__struct_config__
        tag = config.tag_field if config.tag is not None else None
        expected = {f.name for f in fields} | ({tag} if tag else set())
        assert set(rows) == expected, f"artifacts.md table of {name}"
        if tag:
            assert f'"{config.tag}"' in rows[tag]["type"], f"{name}.{tag} tag"
        for field in fields:
            row = rows[field.name]
            assert _squash(plain(row["type"])) == _squash(_annotation(cls, field.name)), (
                f"artifacts.md: type of {name}.{field.name}"
            )
            assert plain(row["default"]) == _default(field), (
                f"artifacts.md: default of {name}.{field.name}"
            )
            assert row["meaning"], f"artifacts.md: {name}.{field.name} has no meaning"


def test_artifact_paths_and_kinds_are_documented() -> None:
    artifacts_md = (DOCS / "artifacts.md").read_text(encoding="utf-8")
    for name, value in vars(eve.manifest).items():
        if name.endswith("_PATH"):
            assert f"`{value}`" in artifacts_md, name
    for cls in manifest_structs().values():
        for field in msgspec.structs.fields(cls):
            if field.name == "kind" and isinstance(field.default, str):
                assert f"`{field.default}`" in artifacts_md, field.default


def test_every_info_json_field_is_documented() -> None:
    cli_md = (DOCS / "cli.md").read_text(encoding="utf-8")
    structs = [
        value
        for value in vars(eve.runtime.info).values()
        if isinstance(value, type)
        and issubclass(value, msgspec.Struct)
        and value.__module__ == "eve.runtime.info"
    ]
    assert {s.__name__ for s in structs} >= {"AgentInfo", "NodeInfo", "ToolInfo"}
    for cls in structs:
        rows = section_table(cli_md, f"### `{cls.__name__}`")
        assert {plain(r["field"]) for r in rows} == set(cls.__struct_fields__), cls.__name__


def test_links_between_pages_resolve() -> None:
    for page in PAGES:
        text = re.sub(r"^```.*?^```", "", page.read_text("utf-8"), flags=re.M | re.S)
        for target, anchor in re.findall(r"\]\(([\w./-]*\.md)?(?:#([\w-]+))?\)", text):
            path = DOCS / target if target else page
            if not target and not anchor:
                continue
            assert path.is_file(), f"docs/{page.name} links to missing {target}"
            if anchor:
                headings = [
                    slug(h) for h in re.findall(r"^#+ (.+)$", path.read_text("utf-8"), re.M)
                ]
                assert anchor in headings, f"docs/{page.name} links to missing #{anchor}"
