"""Typed final answers (``define_agent(output_schema=...)``): how the answer is asked for,
judged, and sent back to fix.

The client decides how the answer comes. One with ``structured_output = True`` is sent the
schema (``ModelRequest.output_schema``) and its final text is parsed as JSON; any other is
offered ``eve__final_answer``, a tool whose input schema is the output schema and which
ends the turn. Either way the answer is validated by the live pydantic class (or the JSON
Schema), and an invalid one goes back to the model (as the tool's failed result, or as a
user-side message) at most ``Output.retries`` times; then the turn fails with
``OutputInvalid``. Judging reads only the history, so a replayed durable turn judges the
same way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pydantic

from eve.authoring.context import ToolContext
from eve.errors import EveError, OutputInvalid
from eve.manifest import FunctionToolEntry
from eve.messages import AssistantMessage, Message, ToolResultMessage
from eve.models.base import FINAL_ANSWER_TOOL
from eve.runtime.resolved import ResolvedFunctionTool, ResolvedOutput
from eve.runtime.validation import InputValidator, JsonSchemaValidator, PydanticValidator

__all__ = ["FINAL_ANSWER_TOOL", "Accepted", "OutputCheck", "Pending", "Rejected", "output_text"]

_ACCEPTED = "Answer accepted."


@dataclass(frozen=True, kw_only=True)
class Accepted:
    """A valid answer: ``value`` is the class's instance (or the JSON, for a schema)."""

    value: Any

    def json(self) -> Any:
        if isinstance(self.value, pydantic.BaseModel):
            return self.value.model_dump(mode="json")
        return self.value


def output_text(output: Any) -> str:
    """A typed answer (``RunResult.output``) as JSON text: what a subagent's caller reads
    and what ``eve run`` prints."""
    return json.dumps(Accepted(value=output).json(), ensure_ascii=False)


@dataclass(frozen=True, kw_only=True)
class Rejected:
    """An invalid answer. ``tell`` is the user-side message that asks for a fix, or None
    when the model already read what is wrong (the final-answer tool's failed result)."""

    problem: str
    tell: str | None = None


@dataclass(frozen=True, kw_only=True)
class Pending:
    """No answer yet: the model is still working (it called other tools)."""


Verdict = Accepted | Rejected | Pending


async def _accept(data: Any, ctx: ToolContext) -> str:
    # The loop reads the answer from the call's input in the history, not from here: a
    # replayed durable step does not run tools again.
    return _ACCEPTED


class OutputCheck:
    """The typed answer of one turn: the tool to offer (if any) and the judge."""

    def __init__(self, output: ResolvedOutput, *, native: bool) -> None:
        self.output = output
        #: whether the client constrains the answer itself (``structured_output``)
        self.native = native
        self.validator: InputValidator = (
            PydanticValidator(output.model)
            if output.model is not None
            else JsonSchemaValidator(output.spec.json_schema)
        )
        self.rejections = 0

    @property
    def schema(self) -> dict[str, Any]:
        return self.output.spec.json_schema

    def tool(self) -> ResolvedFunctionTool | None:
        """``eve__final_answer``, for a client without structured output."""
        if self.native:
            return None
        entry = FunctionToolEntry(
            name=FINAL_ANSWER_TOOL,
            description="Give your final answer: call this once you are done, with the "
            "answer as the input. It ends your turn; do not answer in text instead.",
            logical_path="",
            source_id=f"eve:builtins/{FINAL_ANSWER_TOOL}",
            input_schema=self.schema,
            ends_turn=True,
        )
        return ResolvedFunctionTool(entry=entry, execute=_accept, validator=self.validator)

    def judge(self, turn: list[Message], *, complete: bool) -> Verdict:
        """What the turn so far (its messages) says about the answer; ``complete`` is
        whether the step just run would end the turn."""
        if self.native:
            return self._judge_text(turn) if complete else Pending()
        return self._judge_call(turn, complete=complete)

    def _judge_text(self, turn: list[Message]) -> Verdict:
        last = _last_answer(turn)
        text = last.text if last is not None else ""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            return self._rejected(f"the answer is not JSON ({error.msg} at {error.pos})")
        if not isinstance(data, dict):
            return self._rejected("the answer is not a JSON object")
        try:
            return Accepted(value=self.validator.validate(data))
        except EveError as error:
            return self._rejected(str(error))

    def _rejected(self, problem: str) -> Rejected:
        tell = (
            f"Your answer does not match the required output schema: {problem}. Answer "
            "again with only the corrected JSON object."
        )
        return Rejected(problem=problem, tell=tell)

    def _judge_call(self, turn: list[Message], *, complete: bool) -> Verdict:
        last = _last_answer(turn)
        calls = [c for c in last.tool_calls if c.name == FINAL_ANSWER_TOOL] if last else []
        results = {m.tool_call_id: m for m in turn if isinstance(m, ToolResultMessage)}
        for call in calls:
            result = results.get(call.id)
            if result is not None and not result.is_error:
                return Accepted(value=self.validator.validate(call.input))
        if calls:
            failed = results.get(calls[-1].id)
            return Rejected(problem=failed.content if failed else "no result")
        if not complete:
            return Pending()
        return Rejected(
            problem=f"the model answered in text without calling {FINAL_ANSWER_TOOL}",
            tell=f"Give your final answer by calling {FINAL_ANSWER_TOOL}, with the answer as "
            "its input; an answer in text is not taken.",
        )

    def count(self, verdict: Rejected, *, model_id: str) -> None:
        """One more invalid answer; past ``Output.retries`` the turn fails."""
        self.rejections += 1
        allowed = self.output.spec.retries
        if self.rejections > allowed:
            raise OutputInvalid(
                f"{model_id}: the final answer did not match output_schema after "
                f"{self.rejections} tries ({allowed} fix(es) allowed by output_retries): "
                f"{verdict.problem}. Describe the answer in the instructions, loosen the "
                "schema, or raise define_agent(output_retries=...)",
                attempts=self.rejections,
                problem=verdict.problem,
            )


def _last_answer(turn: list[Message]) -> AssistantMessage | None:
    return next((m for m in reversed(turn) if isinstance(m, AssistantMessage)), None)
