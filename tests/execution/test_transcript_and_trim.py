"""Transcript loading errors and context trimming."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from eve.errors import TranscriptCorrupt
from eve.execution import trim
from eve.execution.transcript import TranscriptWriter, load_transcript
from eve.execution.trim import estimate_tokens, trim_history
from eve.messages import (
    AssistantMessage,
    ProviderPart,
    ReasoningPart,
    TextPart,
    ToolCall,
    assistant_message,
    tool_result,
    user_message,
)


def test_missing_transcript_is_empty(tmp_path: Path) -> None:
    assert load_transcript(tmp_path / "none.jsonl") == []


def test_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    writer = TranscriptWriter(path)
    writer.append(user_message("hi"))
    with path.open("a") as handle:
        handle.write('{"role": "robot"}\n')
    with pytest.raises(TranscriptCorrupt) as raised:
        load_transcript(path)
    assert raised.value.line == 2
    assert str(raised.value).startswith(f"{path}:2: not a transcript message")


def test_trim_keeps_tool_calls_with_their_results() -> None:
    call = ToolCall(id="1", name="t", input={"q": "x" * 40})
    history = [
        user_message("a" * 400),
        assistant_message(tool_calls=[call]),
        tool_result("1", "r" * 200),
        user_message("latest"),
    ]
    kept = trim_history(history, budget_tokens=80)
    assert kept == history[1:]  # the call and its result move together; the long opener goes
    assert trim_history(history, budget_tokens=5) == [history[-1]]  # the newest always stays
    assert trim_history(history, None) == history


def test_trim_never_starts_with_an_orphaned_result() -> None:
    history = [tool_result("x", "old"), user_message("hi")]
    assert trim_history(history, budget_tokens=1000) == [user_message("hi")]


def test_an_estimate_counts_what_the_model_reads() -> None:
    call = ToolCall(id="1", name="add", input={"a": 1})
    said = AssistantMessage(
        parts=[
            ReasoningPart(provider="anthropic", text="r" * 400),  # not sent as text
            TextPart(text="t" * 40),
            ProviderPart(provider="anthropic", block={}, text="c" * 20, answer=True),
            ProviderPart(provider="anthropic", block={}, text="p" * 400),  # a description
            call,
        ]
    )
    assert estimate_tokens(said) == (40 + 20 + len("add") + len(str(call.input))) // 4 + 4
    assert estimate_tokens(user_message("u" * 80)) == 24
    assert estimate_tokens(tool_result("1", "x" * 8)) == 6


def test_an_estimate_is_remembered_while_its_message_lives() -> None:
    message = user_message("a" * 400)
    assert estimate_tokens(message) == 104
    assert trim._estimates[id(message)].tokens == 104
    # another message of other text is measured on its own, whatever its id
    other = user_message("b" * 40)
    assert estimate_tokens(other) == 14
    key = id(message)
    del message
    gc.collect()
    assert key not in trim._estimates
