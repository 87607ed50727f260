"""The offline models and model selection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eve.errors import OfflineScriptError, UnknownModel
from eve.messages import ToolResultMessage
from eve.models.offline import OfflineScriptModel, OfflineTestModel
from eve.models.registry import choose_model, create_client
from eve.models.schema_sample import sample
from eve.tools import tool
from tests.execution.helpers import live, turn


@tool
def shout(word: str, times: int = 2) -> str:
    """Shout."""
    return (word.upper() + " ") * times


def test_samples_satisfy_schemas() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 5},
            "x": {"type": "number", "exclusiveMinimum": 0},
            "kind": {"enum": ["a", "b"]},
            "when": {"anyOf": [{"type": "null"}, {"type": "string"}]},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "ref": {"$ref": "#/$defs/Inner"},
            "opt": {"type": "string"},
        },
        "required": ["n", "x", "kind", "when", "tags", "ref"],
        "$defs": {
            "Inner": {
                "type": "object",
                "properties": {"ok": {"type": "boolean"}},
                "required": ["ok"],
            }
        },
    }
    assert sample(schema) == {
        "n": 5,
        "x": 1.0,
        "kind": "a",
        "when": "example",
        "tags": ["example"],
        "ref": {"ok": True},
    }


async def test_offline_test_calls_each_tool_once_then_summarizes() -> None:
    result = await turn(
        client=OfflineTestModel(), system="s", tools=[live("shout", shout)], user_message="go"
    )
    results = [m for m in result.messages if isinstance(m, ToolResultMessage)]
    assert [r.content for r in results] == ["EXAMPLE EXAMPLE "]
    assert result.final_text == "(offline/test) I called 1 tool(s):\n- shout: EXAMPLE EXAMPLE "
    assert result.stop_reason == "complete"


async def test_offline_test_without_tools_echoes() -> None:
    result = await turn(client=OfflineTestModel(), system="s", tools=[], user_message="ping")
    assert result.final_text == "(offline/test) You said: ping"


async def test_script_replays_and_then_says_it_ran_out(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                {"tool_calls": [{"name": "shout", "input": {"word": "hey", "times": 1}}]},
                {"text": "done shouting"},
            ]
        )
    )
    model = OfflineScriptModel(script, label="script.json")
    result = await turn(client=model, system="s", tools=[live("shout", shout)], user_message="go")
    assert result.final_text == "done shouting"
    assert [m.content for m in result.messages if isinstance(m, ToolResultMessage)] == ["HEY "]
    with pytest.raises(OfflineScriptError, match="has 2 response"):
        await turn(
            client=model, system="s", tools=[], user_message="again", messages=result.messages
        )


async def test_a_script_by_node_answers_each_node_from_its_own_list(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"__root__": [{"text": "root"}], "helper": [{"text": "help"}]}))
    model = OfflineScriptModel(script, label="script.json")
    root = await turn(client=model, system="s", tools=[], user_message="go")
    helper = await turn(client=model, system="s", tools=[], user_message="go", node_id="helper")
    assert (root.final_text, helper.final_text) == ("root", "help")
    with pytest.raises(OfflineScriptError, match=r"no responses for node 'other' \(it has"):
        await turn(client=model, system="s", tools=[], user_message="go", node_id="other")


def test_bad_scripts_are_clear(tmp_path: Path) -> None:
    with pytest.raises(OfflineScriptError, match="not found"):
        OfflineScriptModel(tmp_path / "missing.json", label="missing.json")
    (tmp_path / "bad.json").write_text('[{"txt": "typo"}]')
    with pytest.raises(OfflineScriptError, match="not a list of"):
        OfflineScriptModel(tmp_path / "bad.json", label="bad.json")


def test_missing_credentials_fall_back_to_offline_with_one_line(tmp_path: Path) -> None:
    choice = choose_model("anthropic/claude-sonnet-4-5", app_root=tmp_path, env={})
    assert choice.client.model_id == "offline/test"
    assert choice.notice is not None and "ANTHROPIC_API_KEY is not set" in choice.notice
    assert "\n" not in choice.notice
    same = choose_model("offline/test", app_root=tmp_path, env={})
    assert same.notice is None


def test_unknown_model_ids(tmp_path: Path) -> None:
    with pytest.raises(UnknownModel, match="unknown model id 'mystery/x'"):
        create_client("mystery/x", app_root=tmp_path, env={})
    (tmp_path / "s.json").write_text("[]")
    script = create_client("offline/script:s.json", app_root=tmp_path, env={})
    assert script.model_id == "offline/script:s.json"
