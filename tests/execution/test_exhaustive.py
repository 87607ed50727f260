"""Every dispatch over a closed set in the loop is exhaustive: mypy fails when a variant is
added to one of the turn's unions (or a kind of tool, or a workflow's mail) and nothing
handles it.

One mypy run with the project's configuration: the union modules are read from shadow
copies (``--shadow-file``) that each add a variant, and mypy must report an unhandled
``assert_never`` for every added variant. Its cache persists between runs (under ``.mypy_cache``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.mypy_cache import seeded_cache

ROOT = Path(__file__).resolve().parents[2]

#: module → (the union as it is, the union with a new variant added, the new variant)
ADDED = {
    "eve/execution/turn_actions.py": [
        (
            "    | AskLimit\n    | Finish\n)",
            "    | AskLimit\n    | Finish\n    | Pause\n)",
            "Pause",
        ),
        ("    | LimitAnswered\n)", "    | LimitAnswered\n    | Paused\n)", "Paused"),
    ],
    "eve/execution/turn_state.py": [
        (
            "Resume = Fresh | Answered | Settled | Listed",
            "Resume = Fresh | Answered | Settled | Listed | Replayed",
            "Replayed",
        ),
        (
            "    | StepSettled\n    | Done\n)",
            "    | StepSettled\n    | Done\n    | Waiting\n)",
            "Waiting",
        ),
    ],
    "eve/runtime/resolved.py": [
        (
            "ResolvedTool = ResolvedFunctionTool | ResolvedWorkflowTool | ResolvedSubagent"
            " | ResolvedProviderTool\n",
            "ResolvedTool = ResolvedFunctionTool | ResolvedWorkflowTool | ResolvedSubagent"
            " | ResolvedProviderTool | ResolvedRemote\n",
            "ResolvedRemote",
        ),
        (
            "RunnableTool = ResolvedFunctionTool | ResolvedWorkflowTool | ResolvedSubagent\n",
            "RunnableTool = ResolvedFunctionTool | ResolvedWorkflowTool | ResolvedSubagent"
            " | ResolvedPlugin\n",
            "ResolvedPlugin",
        ),
    ],
    "eve/wire/mailbox.py": [
        (
            "MailboxMessage = AnswerMail | EventMail | CancelMail\n",
            "MailboxMessage = AnswerMail | EventMail | CancelMail | PauseMail\n",
            "PauseMail",
        ),
    ],
    "eve/execution/checkpoints.py": [
        (
            "StepPart = RanAll | AsksPerson | StartsTask | NeedsListing | RunsBatch | Aborted",
            "StepPart = RanAll | AsksPerson | StartsTask | NeedsListing | RunsBatch | Aborted"
            " | Halted",
            "Halted",
        ),
    ],
}
#: the files where each added variant must be reported unhandled
EXPECTED = {
    "Pause": ["driver.py"],
    "Paused": ["transitions.py"],
    "Replayed": ["driver.py", "step_calls.py"],
    "Waiting": ["transitions.py"],
    "Halted": ["transitions.py"],
    "ResolvedRemote": ["tool_calls.py", "catalog_calls.py", "turn_config.py"],
    "ResolvedPlugin": ["tool_calls.py"],
    "PauseMail": ["mailbox.py"],
}


def test_an_added_variant_nothing_handles_fails_mypy(tmp_path: Path) -> None:
    args: list[str] = []
    for module, changes in ADDED.items():
        source = (ROOT / module).read_text()
        for old, new, name in changes:
            assert source.count(old) == 1, f"{module}: the union changed, update ADDED"
            # the new variant, declared right before the union that names it
            declared = f'class {name}:\n    """A kind nothing handles yet."""\n\n\n'
            start = source.rfind("\n\n", 0, source.index(old)) + 2
            source = source[:start] + declared + source[start:].replace(old, new, 1)
        shadow = tmp_path / Path(module).name
        shadow.write_text(source)
        args += ["--shadow-file", module, str(shadow)]
    # beside the project's own cache (ignored by git) and begun from it: even the first run
    # rereads only the shadowed modules and what depends on them
    cache = seeded_cache("exhaustive")
    checked = [f"eve/execution/{name}.py" for name in ("driver", "transitions", "step_calls")]
    checked.append("eve/sessions/mailbox.py")  # the one receive loop over a workflow's mail
    # without PYTHONPATH: mypy searches it as it does the site-packages, and a module found
    # there is an installed one whose errors it keeps quiet, so with the repository's root
    # on it (a checkout run in place) the unhandled variants of tool_calls.py went unreported
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    ran = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(cache), *args, *checked],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == 1, ran.stdout + ran.stderr
    unhandled: dict[str, set[str]] = {}
    for line in ran.stdout.splitlines():
        found = re.match(
            r'(eve/[\w/]+\.py):\d+: error: Argument 1 to "assert_never" has incompatible type "(\w+)"',
            line,
        )
        if found:
            unhandled.setdefault(found[2], set()).add(Path(found[1]).name)
    assert unhandled == {name: set(files) for name, files in EXPECTED.items()}, ran.stdout
