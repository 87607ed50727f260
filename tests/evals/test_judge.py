"""The judge, with a scripted judge model: its prompt, the score's two forms, bad answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eve.errors import JudgeAnswerInvalid
from eve.evals import Case, Judge, Reply
from eve.evals.judge import JUDGEMENT_TOOL, judge_prompt, parse_judgement, render_transcript
from eve.execution.setup import AgentSetup
from tests.evals.helpers import failure, run_one


def _judged(setup: AgentSetup, root: Path, replies: list[dict[str, object]], threshold: float):  # type: ignore[no-untyped-def]
    (root / "judge.json").write_text(json.dumps(replies))
    judge = Judge("Greets the user.", model="offline/script:judge.json", threshold=threshold)
    return run_one(setup, Case("greets", "hi", script=[Reply("Hello!")], expect=[judge]))


def test_a_score_at_the_threshold_passes(setup: AgentSetup, example_root: Path) -> None:
    outcome = _judged(setup, example_root, [{"text": '{"score": 0.8, "reason": "Warm."}'}], 0.8)
    assert outcome.passed, failure(outcome)
    assert outcome.checks[1].name == "judge offline/script:judge.json ≥ 0.8"
    assert outcome.checks[1].seen == "score 0.8: Warm."


def test_a_score_below_fails_and_a_tool_call_counts(setup: AgentSetup, example_root: Path) -> None:
    call = {"tool_calls": [{"name": JUDGEMENT_TOOL, "input": {"score": 0.3, "reason": "Curt."}}]}
    outcome = _judged(setup, example_root, [call], 0.5)
    assert failure(outcome) == "judge offline/script:judge.json ≥ 0.5: score 0.3: Curt."


def test_an_unparseable_judgement_fails_the_case_naming_the_error(
    setup: AgentSetup, example_root: Path
) -> None:
    outcome = _judged(setup, example_root, [{"text": "Nice greeting, 10/10"}], 0.5)
    assert failure(outcome).startswith(
        "judge offline/script:judge.json ≥ 0.5: JudgeAnswerInvalid: the judge "
        "offline/script:judge.json answered 'Nice greeting, 10/10'"
    )


@pytest.mark.parametrize(
    ("text", "score"),
    [
        ('{"score": 1, "reason": "ok"}', 1.0),
        ('Here:\n```json\n{"score": 0.25, "reason": "meh"}\n```', 0.25),
    ],
)
def test_the_text_forms_of_a_judgement(text: str, score: float) -> None:
    assert parse_judgement("m", text, None).score == score


@pytest.mark.parametrize("text", ['{"score": 1.5}', '{"score": true}', '{"reason": "x"}', "[]"])
def test_answers_that_are_no_score(text: str) -> None:
    with pytest.raises(JudgeAnswerInvalid) as raised:
        parse_judgement("offline/test", text, None)
    assert raised.value.model == "offline/test" and raised.value.answer == text


def test_the_prompt_holds_the_rubric_and_the_transcript(setup: AgentSetup) -> None:
    outcome = run_one(setup, Case("greets", "hi", script=[Reply("Hello!")]))
    transcript = render_transcript(outcome.run.messages)
    assert transcript == "user: hi\nassistant: Hello!"
    prompt = judge_prompt("  Greets.  ", transcript)
    assert prompt.startswith("Rubric:\nGreets.\n\nTranscript:\nuser: hi\nassistant: Hello!\n\n")
    assert prompt.endswith('{"score": <a number from 0 to 1>, "reason": "<one sentence>"}')
