"""``eve run --session FILE`` keeps the conversation's ``define_state`` across runs, beside
the transcript (``FILE.state.json``), as a durable session keeps it in its checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from eve.cli import main
from tests.conftest import AppFactory

COUNTER = {
    "agent/tools/count.py": """
        from eve.context import define_state
        from eve.tools import tool

        visits = define_state("visits", 0)

        @tool
        def count() -> int:
            '''Count the calls in this session.'''
            return visits.update(lambda n: n + 1)
    """,
}


def counted(root: Path, *args: str) -> int:
    ran = CliRunner().invoke(main, ["-C", str(root), "run", "--json", *args, "count"])
    assert ran.exit_code == 0, ran.output
    events = [json.loads(line) for line in ran.stdout.splitlines() if line.startswith("{")]
    [result] = [e["data"] for e in events if e["type"] == "action.result"]
    return int(result["output"])


def test_state_carries_over_between_runs_of_one_transcript(make_app: AppFactory) -> None:
    root = make_app(COUNTER)
    chat = root / "chat.jsonl"
    assert counted(root, "--session", str(chat)) == 1
    assert counted(root, "--session", str(chat)) == 2  # the same conversation goes on
    assert json.loads((root / "chat.jsonl.state.json").read_text()) == {"state:visits": 2}
    assert counted(root, "--session", str(root / "other.jsonl")) == 1  # another starts fresh
    assert counted(root) == 1  # and so does a run with no transcript


def test_a_corrupt_state_file_is_named_and_left_alone(make_app: AppFactory) -> None:
    root = make_app(COUNTER)
    (root / "chat.jsonl.state.json").write_text("{not json")
    ran = CliRunner().invoke(
        main, ["-C", str(root), "run", "--session", str(root / "chat.jsonl"), "count"]
    )
    assert ran.exit_code == 1
    assert "chat.jsonl.state.json: not the session's saved state" in ran.stderr
    assert (root / "chat.jsonl.state.json").read_text() == "{not json"
