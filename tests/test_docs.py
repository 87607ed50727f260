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

import asyncio
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
from eve.channels.kinds import KIND_MODULES
from eve.channels.serving import channel_declarations
from eve.compiler import compile_agent
from eve.runtime import load_compiled_agent
from tests import forked
from tests.conftest import AppFactory
from tests.session_files import copy_session_files
from tests.sessions.threaded import ThreadedServer

#: the example agent's units server forked from the fork server, not started anew
#: (``forked_stdio_scripts``)
pytestmark = pytest.mark.usefixtures("forked_stdio_scripts")

REPO_ROOT = Path(__file__).resolve().parent.parent
DOCS = REPO_ROOT / "docs"
#: the pages, and the pages of a subject's own directory (docs/channels/<kind>.md)
PAGES = sorted(DOCS.glob("*.md")) + sorted(DOCS.glob("*/*.md"))
CORE_PAGES = ["index.md", "layout.md", "artifacts.md", "cli.md", "errors.md", "runtime.md"]
#: the only commands a console block may show: they read the artifacts and change nothing
READ_ONLY = [["compile", "--check"], ["info"], ["info", "--json"]]
ELISION = {"...", "…"}
CODE = re.compile(r'"((?:discover|compile)/[a-z-]+)"')


def name_of(page: Path) -> str:
    """The page as the docs name it, below docs/: ``cli.md``, ``channels/a2a.md`` (a page
    elsewhere, the README, by its file name)."""
    return page.relative_to(DOCS).as_posix() if page.is_relative_to(DOCS) else page.name


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
        assert end is not None, f"{name_of(page)}:{i + 1}: unclosed code fence"
        body = "\n".join(lines[i + 1 : end]) + "\n"
        found.append(Block(name_of(page), i + 1, opening[1], opening[2].strip(), body))
        i = end + 1
    return found


def runnable(page: Path) -> list[Block]:
    return [b for b in fenced_blocks(page) if b.lang == "python" and b.flags in ("", "server")]


def server_blocks(page: Path) -> list[Block]:
    return [b for b in fenced_blocks(page) if b.flags == "server"]


@contextmanager
def example_server(tmp: Path, session_files: Path) -> Iterator[str]:
    """What ``eve serve --model offline/test`` serves, for a copy of the example agent (its
    own session database, from ``session_files``: ``tests/session_files.py``), on a free
    loopback port; yields the server's root URL. It runs in a thread of this process:
    nothing here needs the server to die."""
    root = tmp / "example"
    shutil.copytree(REPO_ROOT / "agent", root / "agent")
    shutil.copytree(
        REPO_ROOT / ".eve", root / ".eve", ignore=shutil.ignore_patterns("sessions", "*.sqlite*")
    )
    copy_session_files(session_files, root)
    # its channels too (agent/channels/), as eve serve mounts them
    channels = asyncio.run(channel_declarations(load_compiled_agent(root)))
    server = ThreadedServer(root, model="offline/test", channels=channels)
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


@pytest.mark.parametrize("page", [p for p in PAGES if runnable(p)], ids=name_of)
def test_python_examples_run(
    page: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, session_files: Path
) -> None:
    monkeypatch.chdir(REPO_ROOT)
    monkeypatch.delenv("EVE_APP_ROOT", raising=False)
    namespace: dict[str, Any] = {"__name__": f"docs_{page.stem}"}
    with contextlib.ExitStack() as stack:
        if any(b.lang == "python" for b in server_blocks(page)):  # sh ones get their own
            served = example_server(tmp_path, session_files)
            monkeypatch.setenv("EVE_URL", stack.enter_context(served))
        for block in runnable(page):
            code = compile(block.body, f"docs/{name_of(page)}:{block.line}", "exec")
            exec(code, namespace)


@pytest.mark.parametrize(
    "page",
    [p for p in PAGES if any(b.lang == "sh" for b in server_blocks(p))],
    ids=name_of,
)
def test_shell_examples_run_against_a_server(
    page: Path, tmp_path: Path, session_files: Path
) -> None:
    script = "".join(b.body for b in server_blocks(page) if b.lang == "sh")
    with example_server(tmp_path, session_files) as url:
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
        f"docs/{name_of(page)}: the ```sh server examples failed:\n{done.stdout}{done.stderr}"
    )


#: a channel declaration example names the file it is: ``# agent/channels/<name>.py``
DECLARATION = re.compile(r"^# agent/channels/(\w+)\.py\b")


def declaration_cases() -> list[Any]:
    return [
        pytest.param(block, id=f"{block.page}:{block.line}")
        for page in PAGES
        for block in fenced_blocks(page)
        if block.lang == "python" and DECLARATION.match(block.body)
    ]


@pytest.mark.parametrize("block", declaration_cases())
def test_channel_declarations_compile(block: Block, make_app: AppFactory) -> None:
    """A channel declaration shown on a page is one an agent compiles, with no diagnostic,
    into the kind its page is about (``channels/<kind>.md``)."""
    match = DECLARATION.match(block.body)
    assert match is not None
    root = make_app({f"agent/channels/{match[1]}.py": block.body})
    result = compile_agent(root)
    where = f"docs/{block.page}:{block.line}"
    assert [d.message for d in result.diagnostics.items] == [], where
    assert result.manifest is not None
    [entry] = result.manifest.nodes[eve.manifest.ROOT_NODE_ID].channels
    kind = Path(block.page).stem if block.page.startswith("channels/") else entry.kind
    assert (entry.name, entry.kind) == (match[1], kind), where


def test_every_channel_kind_has_a_page_with_a_declaration_that_compiles() -> None:
    """docs/channels.md links each kind's page, and each page shows its declaration."""
    overview = (DOCS / "channels.md").read_text(encoding="utf-8")
    shown = {block.page for block in (p.values[0] for p in declaration_cases())}
    for kind in KIND_MODULES:
        if kind == "custom":  # define_channel's page is the overview's own section
            continue
        assert f"](channels/{kind}.md)" in overview, f"channels.md does not link {kind}.md"
        assert f"channels/{kind}.md" in shown, f"channels/{kind}.md shows no declaration"


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
                    pytest.param(
                        name_of(page), where, line[2:], shown, id=f"{name_of(page)}:{where}"
                    )
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
    done = forked.run(
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
        assert sorted(documented - codes) == [], f"docs/{name_of(page)} names unknown codes"


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
            path = (page.parent / target).resolve() if target else page
            if not target and not anchor:
                continue
            assert path.is_file(), f"docs/{name_of(page)} links to missing {target}"
            if anchor:
                headings = [
                    slug(h) for h in re.findall(r"^#+ (.+)$", path.read_text("utf-8"), re.M)
                ]
                assert anchor in headings, f"docs/{name_of(page)} links to missing #{anchor}"
