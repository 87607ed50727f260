"""A server's sampling requests in a real turn: answered by the agent's own model when the
connection allows it (bounded, counted in the turn's usage), refused by the spec otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from eve.compiler import compile_to_disk
from eve.events import ActionResult, TurnCompleted
from eve.models.events import TokenUsage
from eve.runtime.server_asks import FormAnswer, FormAsk
from tests.connections.asking_apps import asking_connection
from tests.connections.compiled_turn import compiled_turn
from tests.execution.helpers import calls, text


def app(tmp_path: Path, options: str) -> Path:
    agent = tmp_path / "agent"
    (agent / "connections").mkdir(parents=True)
    (agent / "instructions.md").write_text("You write.\n")
    source = asking_connection(tmp_path / "counted", options)
    (agent / "connections" / "asking.py").write_text(source)
    compile_to_disk(tmp_path, use_cache=False)
    return tmp_path


async def test_sampling_is_answered_by_the_agents_model_bounded_and_counted(
    tmp_path: Path,
) -> None:
    root = app(tmp_path, 'sampling="always", sampling_max_tokens=64,')
    sampled = TokenUsage(input_tokens=7, output_tokens=5)
    model, events = await compiled_turn(
        root,
        calls(("asking__haiku", {"topic": "rain"})),
        text("soft rain on the roof", usage=sampled),
        text("done"),
    )
    asked = model.requests[1]
    assert asked.system == "You write haiku."
    assert [m.text for m in asked.messages] == ["A haiku about rain"]
    assert asked.max_output_tokens == 64, "the server's 5000 bounded by sampling_max_tokens"
    [result] = [e.data for e in events if isinstance(e, ActionResult)]
    assert result.status == "completed"
    assert result.output.endswith("(endTurn): soft rain on the roof")
    [completed] = [e.data for e in events if isinstance(e, TurnCompleted)]
    # the tool call's step (10 in, 2 out), the sampling (7, 5) and the last step (0, 0)
    assert (completed.usage.input_tokens, completed.usage.output_tokens) == (17, 7)


@pytest.mark.parametrize(
    ("options", "why"),
    [
        ("", "Sampling not supported"),  # never: eve does not offer the capability
        ('sampling="ask",', "no one here can allow it"),
    ],
)
async def test_sampling_not_allowed_is_refused_with_the_specs_error(
    tmp_path: Path, options: str, why: str
) -> None:
    root = app(tmp_path, options)
    model, events = await compiled_turn(
        root, calls(("asking__haiku", {"topic": "rain"})), text("done")
    )
    assert len(model.requests) == 2, "the model was not asked for the server"
    [result] = [e.data for e in events if isinstance(e, ActionResult)]
    assert result.output.startswith("refused: MCPError"), result.output
    assert why in result.output


class Person:
    """Answers every form as told, and keeps what it was asked."""

    def __init__(self, answer: FormAnswer) -> None:
        self.answer = answer
        self.asked: list[FormAsk] = []

    async def ask(self, form: FormAsk) -> FormAnswer:
        self.asked.append(form)
        return self.answer


async def test_sampling_a_person_declines_is_refused(tmp_path: Path) -> None:
    root = app(tmp_path, 'sampling="ask",')
    person = Person(FormAnswer(action="decline"))
    model, events = await compiled_turn(
        root, calls(("asking__haiku", {"topic": "rain"})), text("done"), forms=person
    )
    [form] = person.asked
    assert (form.purpose, form.schema, form.tool_name) == ("sampling", {}, "asking__haiku")
    assert "A haiku about rain" in form.message
    assert len(model.requests) == 2
    [result] = [e.data for e in events if isinstance(e, ActionResult)]
    assert "User rejected sampling request: a person answered decline" in result.output
