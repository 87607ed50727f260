"""The judge: a model scores a case's conversation against a rubric, from 0 to 1.

The request is one user message (``judge_prompt``: the rubric, then the transcript) under
``JUDGE_SYSTEM``. A client with native structured output gets ``JUDGEMENT_SCHEMA`` as its
output schema; any other is offered one tool, ``record_judgement``, with that schema as input.
The answer is read from that tool's call if there is one, else from the text: a JSON object
``{"score": …, "reason": …}``, alone or in a fenced block. Anything else is
``JudgeAnswerInvalid``.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eve.errors import JudgeAnswerInvalid
from eve.evals.case_run import CaseRun
from eve.evals.expectations import CheckOutcome, Judge, label
from eve.execution.model_stream import stream_response
from eve.messages import Message, plain_transcript, user_message
from eve.models.base import ModelClient, ModelRequest, ToolDeclaration
from eve.models.registry import create_client

JUDGE_SYSTEM = (
    "You grade the conversation of an AI agent against a rubric. Read the rubric and the "
    "transcript, then give a score from 0 (fails the rubric entirely) to 1 (meets it fully) "
    "and a one-sentence reason."
)
JUDGEMENT_TOOL = "record_judgement"
JUDGEMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "reason": {"type": "string"},
    },
    "required": ["score", "reason"],
    "additionalProperties": False,
}
_FENCED = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)


@dataclass(frozen=True, kw_only=True)
class Judgement:
    score: float
    reason: str


def render_transcript(messages: list[Message]) -> str:
    """The conversation as the judge reads it: the plain transcript a compaction's
    summarizer reads too (``eve.messages.plain_transcript``)."""
    return plain_transcript(messages)


def judge_prompt(rubric: str, transcript: str) -> str:
    return (
        f"Rubric:\n{rubric.strip()}\n\nTranscript:\n{transcript}\n\n"
        f"Call {JUDGEMENT_TOOL}, or answer with only a JSON object: "
        '{"score": <a number from 0 to 1>, "reason": "<one sentence>"}'
    )


def _object_in(text: str) -> Any:
    fenced = _FENCED.search(text)
    candidate = fenced.group(1) if fenced else text.strip()
    return json.loads(candidate)


def parse_judgement(model_id: str, text: str, call: dict[str, Any] | None) -> Judgement:
    """The judgement in a tool call's input or the text; ``JudgeAnswerInvalid`` otherwise."""
    try:
        value = call if call is not None else _object_in(text)
    except json.JSONDecodeError:
        value = None
    score = value.get("score") if isinstance(value, dict) else None
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1:
        raise JudgeAnswerInvalid(
            f"the judge {model_id} answered {(text or json.dumps(call))[:200]!r}, which is not "
            'a JSON object {"score": <0 to 1>, "reason": "…"}',
            model=model_id,
            answer=(text or json.dumps(call))[:500],
        )
    reason = value.get("reason") if isinstance(value, dict) else None
    return Judgement(score=float(score), reason=str(reason or ""))


async def ask_judge(client: ModelClient, rubric: str, transcript: str) -> Judgement:
    structured = bool(getattr(client, "structured_output", False))
    request = ModelRequest(
        system=JUDGE_SYSTEM,
        messages=[user_message(judge_prompt(rubric, transcript))],
        tools=[]
        if structured
        else [
            ToolDeclaration(
                name=JUDGEMENT_TOOL,
                description="Record the score (0 to 1) and a one-sentence reason.",
                input_schema=JUDGEMENT_SCHEMA,
            )
        ],
        output_schema=JUDGEMENT_SCHEMA if structured else None,
        max_output_tokens=1024,
    )
    response = await stream_response(client, request, step=None)
    calls = [c.input for c in response.tool_calls if c.name == JUDGEMENT_TOOL]
    return parse_judgement(client.model_id, response.text, calls[0] if calls else None)


async def check_judge(judge: Judge, run: CaseRun, *, app_root: Path) -> CheckOutcome:
    """Ask ``judge.model`` about the run; passes at ``judge.threshold`` or above."""
    client = create_client(judge.model, app_root=app_root, env=os.environ)
    verdict = await ask_judge(client, judge.rubric, render_transcript(run.messages))
    return CheckOutcome(
        name=label(judge),
        passed=verdict.score >= judge.threshold,
        seen=f"score {verdict.score:g}: {verdict.reason}",
    )
