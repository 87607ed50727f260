"""Typed final answers in the loop: the final-answer tool, native structured output, fixes."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from eve.errors import OutputInvalid
from eve.events import SessionEvent
from eve.execution import TurnEnvironment, agent_setup, run_agent
from eve.execution.result import RunResult
from eve.messages import ToolResultMessage, UserMessage
from eve.models.base import FINAL_ANSWER_TOOL, ModelRequest
from eve.models.events import Done, ModelEvent, TextDelta, ToolCallEnd
from eve.models.function import FunctionModel


class Verdict(pydantic.BaseModel):
    approved: bool
    reason: str = pydantic.Field(min_length=3)


def final(data: dict[str, Any], call_id: str = "c") -> list[ModelEvent]:
    return [
        ToolCallEnd(id=call_id, name=FINAL_ANSWER_TOOL, input=data),
        Done(stop_reason="tool_use"),
    ]


def say(text: str) -> list[ModelEvent]:
    return [TextDelta(text=text), Done(stop_reason="end_turn")]


class Script:
    def __init__(self, *responses: list[ModelEvent]) -> None:
        self.responses = list(responses)

    def __call__(self, request: ModelRequest) -> list[ModelEvent]:
        return self.responses.pop(0)


async def run(
    model: FunctionModel, schema: Any = Verdict, retries: int = 2
) -> tuple[RunResult, list[SessionEvent]]:
    events: list[SessionEvent] = []
    setup = agent_setup(model, output_schema=schema, output_retries=retries)
    result = await run_agent(setup, "approve?", env=TurnEnvironment(on_event=events.append))
    return result, events


async def test_the_final_answer_tool_gives_the_typed_output() -> None:
    model = FunctionModel(Script(final({"approved": True, "reason": "in stock"})))
    result, events = await run(model)
    assert result.output == Verdict(approved=True, reason="in stock")
    assert result.stop_reason == "complete"
    [offered] = [t for t in model.requests[0].tools if t.name == FINAL_ANSWER_TOOL]
    assert offered.input_schema == Verdict.model_json_schema()
    assert model.requests[0].output_schema is None
    completed = events[-1]
    assert completed.type == "turn.completed"
    assert completed.data.output == {"approved": True, "reason": "in stock"}  # type: ignore[union-attr]


async def test_an_invalid_call_is_shown_to_the_model_to_fix() -> None:
    model = FunctionModel(
        Script(
            final({"approved": "maybe", "reason": "no"}),
            final({"approved": False, "reason": "late"}),
        )
    )
    result, _ = await run(model)
    assert result.output == Verdict(approved=False, reason="late")
    [first] = [m for m in result.messages if isinstance(m, ToolResultMessage)][:1]
    assert first.is_error and "approved" in first.content and "reason" in first.content


async def test_a_text_answer_is_sent_back_for_the_tool() -> None:
    model = FunctionModel(Script(say("Yes, approved."), final({"approved": True, "reason": "ok!"})))
    result, _ = await run(model)
    assert result.output == Verdict(approved=True, reason="ok!")
    asks = [m for m in result.messages if isinstance(m, UserMessage)][1:]
    assert len(asks) == 1 and FINAL_ANSWER_TOOL in asks[0].text


async def test_native_structured_output_parses_the_text_and_fixes_it() -> None:
    model = FunctionModel(
        Script(say("approved: yes"), say('{"approved": true, "reason": "fine"}')),
        structured_output=True,
    )
    result, _ = await run(model)
    assert result.output == Verdict(approved=True, reason="fine")
    assert model.requests[0].output_schema == Verdict.model_json_schema()
    assert all(t.name != FINAL_ANSWER_TOOL for t in model.requests[0].tools)
    fix = [m for m in result.messages if isinstance(m, UserMessage)][1]
    assert "not JSON" in fix.text


async def test_a_json_schema_output_is_the_plain_object() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    model = FunctionModel(Script(final({"n": "x"}), final({"n": 3})))
    result, _ = await run(model, schema=schema)
    assert result.output == {"n": 3}


async def test_invalid_answers_past_the_retries_fail_the_turn() -> None:
    bad = {"approved": True, "reason": ""}
    model = FunctionModel(Script(final(bad, "a"), final(bad, "b"), final(bad, "c")))
    events: list[SessionEvent] = []
    setup = agent_setup(model, output_schema=Verdict, output_retries=1)
    with pytest.raises(OutputInvalid) as caught:
        await run_agent(setup, "approve?", env=TurnEnvironment(on_event=events.append))
    assert caught.value.attempts == 2 and "reason" in caught.value.problem
    assert "output_retries" in str(caught.value)
    assert len(model.requests) == 2
    assert events[-1].type == "turn.failed"
