"""docs/cli.md's sample outputs are what the program prints.

Every ```console or ```text block of the page that starts with ``$ eve …`` is one command
and its output. The test runs the command for real, offline (no provider key), in a fresh
directory its fence names after the language (```text stale):

* ``example`` (the default): a copy of the example agent, ``agent/``, ``.eve/`` as committed
  and ``examples/``;
* ``empty``: an empty directory;
* ``stale``: the copy with a tool added, ``agent/lib/catalog.py`` edited and
  ``.eve/compile/module_map.py`` edited after the compile;
* ``resume``: the copy after an ``eve dev --model offline/test`` that was left at once.

It compares what the command printed (stdout and stderr as a terminal shows them, in the
order written) with the block, line by line, after only these normalisations:

* a session id (``ses_`` and 32 characters) reads ``ses_…`` on both sides;
* ``eve serve`` runs on a free port (``--port N`` is added) and until it serves: ``N``
  reads as the default port, 8000, and only the lines printed until then count;
* a last line ``...`` in the block (indented or not) stands for the rest of the output;
* trailing spaces and trailing blank lines are dropped.

``python -m tests.test_docs_outputs`` writes the real outputs into the blocks.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import forked
from tests.conftest import PROVIDER_KEYS
from tests.sessions.harness import Server
from tests.test_docs import Block, fenced_blocks

REPO_ROOT = Path(__file__).resolve().parent.parent
PAGE = REPO_ROOT / "docs" / "cli.md"
ELIDED = "..."
SESSION_ID = re.compile(r"\bses_[A-Za-z0-9_-]{32}(?![A-Za-z0-9_-])")  # an id may end in "-"
DEFAULT_PORT = 8000


@dataclass(frozen=True)
class Sample:
    block: Block
    #: the command as the docs show it, without ``$ ``
    command: str
    shown: list[str]

    @property
    def scenario(self) -> str:
        return self.block.flags or "example"

    @property
    def where(self) -> str:
        return f"docs/{self.block.page}:{self.block.line}"


def samples() -> list[Sample]:
    found = []
    for block in fenced_blocks(PAGE):
        lines = block.body.rstrip("\n").splitlines()
        if block.lang in ("console", "text") and lines and lines[0].startswith("$ eve "):
            assert not any(line.startswith("$ ") for line in lines[1:]), (
                f"docs/cli.md:{block.line}: one command per sample block"
            )
            found.append(Sample(block, lines[0][2:], lines[1:]))
    return found


# --- the directories the commands run in ---------------------------------------------------


def example_copy(root: Path) -> None:
    for name in ("agent", "examples"):
        shutil.copytree(REPO_ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    # the artifacts as committed: not what runs in this checkout wrote beside them
    shutil.copytree(REPO_ROOT / ".eve/compile", root / ".eve/compile")
    shutil.copytree(REPO_ROOT / ".eve/discovery", root / ".eve/discovery")


def stale_copy(root: Path) -> None:
    example_copy(root)
    (root / "agent/tools/new_tool.py").write_text("# a new tool, not compiled yet\n")
    with (root / "agent/lib/catalog.py").open("a") as catalog:
        catalog.write("# edited\n")
    with (root / ".eve/compile/module_map.py").open("a") as module_map:
        module_map.write("# edited after the compile\n")


def resumable_copy(root: Path) -> None:
    example_copy(root)
    left = run_eve(["dev", "--model", "offline/test"], root)
    assert "eve dev · offline/test" in left, left


SCENARIOS: dict[str, Callable[[Path], None]] = {
    "example": example_copy,
    "empty": lambda root: None,
    "stale": stale_copy,
    "resume": resumable_copy,
}


# --- running a command ---------------------------------------------------------------------


def environment() -> dict[str, str]:
    """Offline, and Python's output unbuffered so stdout and stderr interleave as written."""
    dropped = {"EVE_APP_ROOT", *PROVIDER_KEYS}
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    return {**env, "PYTHONUNBUFFERED": "1"}


def run_eve(args: list[str], root: Path) -> str:
    done = forked.run(
        [sys.executable, "-m", "eve", *args],
        cwd=root,
        env=environment(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
        check=False,
    )
    return done.stdout


def serve_until_ready(args: list[str], root: Path) -> str:
    """What ``eve serve ARGS`` prints until it serves, its port read as the default."""
    log = root / "serve.log"
    server = Server(root, args=args, env={"PYTHONUNBUFFERED": "1"}, log_path=log).start()
    try:
        printed = log.read_text()
    finally:
        server.stop()
    return printed.replace(f"127.0.0.1:{server.port}/", f"127.0.0.1:{DEFAULT_PORT}/")


def real_output(sample: Sample, root: Path) -> list[str]:
    SCENARIOS[sample.scenario](root)
    args = shlex.split(sample.command)[1:]
    # a server does not exit: what it prints until it serves is its sample
    serving = args[:1] == ["serve"]
    printed = serve_until_ready(args[1:], root) if serving else run_eve(args, root)
    lines = [line.rstrip() for line in printed.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def normalised(lines: list[str]) -> list[str]:
    return [SESSION_ID.sub("ses_…", line.rstrip()) for line in lines]


def elided(shown: list[str]) -> bool:
    """The block's last line is ``...`` (indented as the output around it, if need be)."""
    return bool(shown) and shown[-1].strip() == ELIDED


def matches(shown: list[str], real: list[str]) -> bool:
    if elided(shown):
        head = shown[:-1]
        return normalised(real[: len(head)]) == normalised(head) and len(real) > len(head)
    return normalised(real) == normalised(shown)


@pytest.mark.parametrize("sample", samples(), ids=lambda s: f"cli.md:{s.block.line}")
def test_the_sample_output_is_what_the_command_prints(sample: Sample, tmp_path: Path) -> None:
    assert sample.scenario in SCENARIOS, f"{sample.where}: unknown scenario {sample.scenario!r}"
    real = real_output(sample, tmp_path)
    assert matches(sample.shown, real), (
        f"{sample.where}: `{sample.command}` prints otherwise "
        "(python -m tests.test_docs_outputs rewrites the samples):\n"
        + "\n".join(["shown:", *sample.shown, "real:", *real])
    )


def test_the_page_has_its_samples() -> None:
    commands = {s.command for s in samples()}
    assert {"eve init desk", "eve compile", "eve compile --check", "eve info"} <= commands
    assert {s.scenario for s in samples()} == SCENARIOS.keys()


# --- rewriting the samples -----------------------------------------------------------------


def rewritten(sample: Sample, real: list[str]) -> list[str]:
    if elided(sample.shown):
        real = [*real[: len(sample.shown) - 1], sample.shown[-1]]
    return [f"$ {sample.command}", *real]


def main() -> None:
    import tempfile

    lines = PAGE.read_text(encoding="utf-8").splitlines()
    # from the bottom up, so the line numbers of the blocks above stay right
    for sample in reversed(samples()):
        with tempfile.TemporaryDirectory() as tmp:
            real = real_output(sample, Path(tmp))
        start = sample.block.line  # the fence's line number is the body's first index
        end = start + 1 + len(sample.shown)
        lines[start:end] = rewritten(sample, real)
        print(f"{sample.where}: {sample.command}")
    PAGE.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()


def test_a_session_id_ending_in_a_dash_is_normalised() -> None:
    # token_urlsafe ids may end in "-", where a word boundary is not
    assert normalised(["resumed ses_" + "A" * 31 + "-"]) == ["resumed ses_…"]
