"""The docs stay true: their examples run, their commands print what they show, and every
error, diagnostic code and manifest field is documented."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

import eve.errors
import eve.manifest
from tests.conftest import REPO_ROOT

DOCS = REPO_ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
FENCE = re.compile(r"^```(\S*)([^\n]*)\n(.*?)^```", re.M | re.S)


def blocks(page: Path, lang: str) -> list[str]:
    return [
        body
        for kind, extra, body in FENCE.findall(page.read_text())
        if kind == lang and "no-run" not in extra
    ]


def test_there_are_docs() -> None:
    names = {p.name for p in PAGES}
    assert {
        "index.md",
        "layout.md",
        "artifacts.md",
        "cli.md",
        "errors.md",
        "runtime.md",
        "models.md",
        "loop.md",
        "running.md",
        "builtin-tools.md",
    } <= names


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p, "python")], ids=lambda p: p.name)
def test_python_examples_run(page: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO_ROOT)
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    for number, code in enumerate(blocks(page, "python"), start=1):
        exec(compile(code, f"{page.name}[block {number}]", "exec"), namespace)


def console_cases() -> list[tuple[str, str, list[str]]]:
    cases = []
    for page in PAGES:
        for body in blocks(page, "console"):
            lines = body.splitlines()
            for i, line in enumerate(lines):
                if not line.startswith("$ eve "):
                    continue
                shown = []
                for follow in lines[i + 1 :]:
                    if follow.startswith("$ "):
                        break
                    shown.append(follow)
                cases.append((page.name, line[2:], shown))
    return cases


@pytest.mark.parametrize(("page", "command", "shown"), console_cases())
def test_console_examples_print_what_they_show(page: str, command: str, shown: list[str]) -> None:
    args = command.split()[1:]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC", "OPENAI"))}
    done = subprocess.run(
        [sys.executable, "-m", "eve", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    output = done.stdout + done.stderr
    for line in shown:
        assert line.strip() in output, f"{page}: `{command}` did not print {line!r}"


def test_every_diagnostic_code_is_documented() -> None:
    source = "".join(p.read_text() for p in (REPO_ROOT / "eve/compiler").glob("*.py"))
    codes = set(re.findall(r'"((?:discover|compile)/[a-z-]+)"', source))
    assert len(codes) > 20
    documented = (DOCS / "errors.md").read_text()
    assert [c for c in sorted(codes) if f"`{c}`" not in documented] == []


def test_every_error_class_is_documented() -> None:
    documented = (DOCS / "errors.md").read_text()
    classes = [
        name
        for name, value in vars(eve.errors).items()
        if isinstance(value, type) and issubclass(value, eve.errors.EveError)
    ]
    assert [c for c in classes if f"`{c}`" not in documented] == []


def test_every_manifest_field_is_documented() -> None:
    documented = (DOCS / "artifacts.md").read_text()
    missing = []
    for name, value in vars(eve.manifest).items():
        if (
            isinstance(value, type)
            and issubclass(value, msgspec.Struct)
            and value.__module__ == "eve.manifest"
        ):
            if name == "Base":
                continue
            if f"`{name}`" not in documented:
                missing.append(name)
            missing += [
                f"{name}.{f.name}"
                for f in msgspec.structs.fields(value)
                if f"`{f.name}`" not in documented
            ]
    assert missing == []
