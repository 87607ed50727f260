"""Compaction in the loop: by size on the offline model, pairs kept whole, trimming when the
compaction model fails, a replayed compaction, and the window a node measures against."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

import pytest

from eve._model_windows import KNOWN_WINDOWS, known_window, window_for
from eve.events import CompactionFailed, SessionCompacted, SessionEvent
from eve.execution import TurnEnvironment, agent_setup, run_agent
from eve.execution.compaction import (
    INSTRUCTIONS,
    MIN_SUMMARY_TOKENS,
    SUMMARY_MAX_TOKENS,
    context_tokens,
    plan,
    policy_for,
)
from eve.execution.transcript import load_transcript
from eve.manifest import Compaction
from eve.messages import (
    AssistantMessage,
    Message,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
    assistant_message,
    model_view,
    tool_result,
    user_message,
)
from eve.models.base import ModelRequest
from eve.models.events import ModelEvent
from eve.models.function import FunctionModel
from eve.models.offline import OfflineTestModel
from eve.tools import define_tool
from tests.execution.helpers import calls, live, text
from tests.execution.test_checkpoints import JsonRecorder

WINDOW = 2_000
COMPACT = Compaction(threshold_percent=50)
THRESHOLD = WINDOW * 50 // 100


def _long(n: int) -> str:
    return f"message {n}: " + "lorem ipsum dolor sit amet " * 12


async def _session(turns: int, **setup: Any) -> tuple[list[Message], list[SessionEvent]]:
    client = setup.pop("client", OfflineTestModel())
    events: list[SessionEvent] = []
    app_root = setup.pop("app_root", Path.cwd())
    built = agent_setup(
        client,
        compaction=setup.pop("compaction", COMPACT),
        context_window_tokens=WINDOW,
        **setup,
    )
    built = dataclasses.replace(built, app_root=app_root)
    history: list[Message] = []
    for n in range(turns):
        env = TurnEnvironment(on_event=events.append, turn_id=f"turn_{n}")
        history = (await run_agent(built, _long(n), history=history, env=env)).messages
    return history, events


async def test_a_long_session_on_the_offline_model_compacts_and_stays_under_the_threshold() -> None:
    seen: list[int] = []
    offline = OfflineTestModel()

    def measured(request: ModelRequest) -> Any:
        if request.purpose == "turn":
            seen.append(context_tokens(request.system, request.messages))
        return offline.stream(request)

    history, events = await _session(30, client=FunctionModel(measured, model_id="offline/test"))
    compacted = [e for e in events if isinstance(e, SessionCompacted)]
    assert compacted, "thirty long turns pass half of a 2000-token window"
    first = compacted[0].data
    assert first.tokens_before >= THRESHOLD > first.tokens_after
    assert first.messages_folded > 0 and first.model == "offline/test"
    assert first.usage.output_tokens > 0 and first.reason == "threshold"
    # every request is under the threshold once compaction runs: the one that reached it
    # was compacted before it was sent
    assert max(seen) < THRESHOLD
    # the history keeps every message: 30 user messages, and a summary marker per compaction
    users = [m for m in history if isinstance(m, UserMessage) and m.compaction is None]
    assert len(users) == 30
    marks = [m for m in history if isinstance(m, UserMessage) and m.compaction is not None]
    assert len(marks) == len(compacted)
    assert marks[-1].text.startswith("Summary of the conversation so far")
    assert "(offline summary of" in marks[-1].text


async def test_the_transcript_keeps_the_full_history_with_the_summary_marker(
    tmp_path: Path,
) -> None:
    built = agent_setup(OfflineTestModel(), compaction=COMPACT, context_window_tokens=WINDOW)
    path = tmp_path / "t.jsonl"
    history: list[Message] = []
    for n in range(12):
        env = TurnEnvironment(transcript=path, turn_id=f"turn_{n}")
        history = (await run_agent(built, _long(n), history=history, env=env)).messages
    stored = load_transcript(path)
    assert stored == history
    marks = [m for m in stored if isinstance(m, UserMessage) and m.compaction]
    assert marks
    # compacted before the turn's first request: the turn's own message is kept as it is
    mark = marks[0].compaction
    assert mark is not None and mark.kept >= 1 and mark.folded >= 1
    assert len(model_view(stored)) < len(stored)


async def test_no_compaction_without_the_compaction_setting() -> None:
    history, events = await _session(20, compaction=None)
    assert not [e for e in events if isinstance(e, SessionCompacted)]
    assert not [m for m in history if isinstance(m, UserMessage) and m.compaction]


def test_the_cut_never_splits_a_call_from_its_results() -> None:
    big = "x" * 400
    view: list[Message] = [user_message(big)]
    for n in range(6):
        parts = [ToolCallPart(id=f"c{n}{i}", name="look", input={}) for i in range(2)]
        view.append(assistant_message(big, parts))
        view += [tool_result(p.id, big, name="look") for p in parts]
    cuts = 0
    for keep in range(0, 3_000, 37):
        folded = plan(view, keep)
        if folded is None:
            continue  # everything fits: nothing to fold
        cuts += 1
        kept = view[folded:]
        assert kept, "the newest unit is always kept"
        assert not isinstance(kept[0], ToolResultMessage), f"keep={keep}"
        ids = {c.id for m in kept if isinstance(m, AssistantMessage) for c in m.tool_calls}
        answered = {m.tool_call_id for m in kept if isinstance(m, ToolResultMessage)}
        assert ids == answered, f"keep={keep}"
    assert cuts > 10


async def test_a_turn_of_tool_calls_compacts_between_steps_with_pairs_whole() -> None:
    tool = live(
        "look",
        define_tool(description="Look.", input_schema=None, execute=lambda d, c: "seen " * 80),
    )
    step = 0

    def respond(request: ModelRequest) -> list[ModelEvent]:
        nonlocal step
        if request.purpose == "compaction":
            return text("summary of the looking so far")
        view = request.messages
        first = view[0]
        if isinstance(first, UserMessage) and first.compaction is not None:
            # what follows the summary starts a unit: never a result without its call
            rest = view[1:]
            assert not rest or not isinstance(rest[0], ToolResultMessage)
        step += 1
        return calls(("look", {}), ("look", {}), prefix=f"s{step}_") if step < 12 else text("ok")

    built = agent_setup(
        FunctionModel(respond),
        tools=[tool],
        compaction=COMPACT,
        context_window_tokens=WINDOW,
        max_turns=20,
    )
    events: list[SessionEvent] = []
    result = await run_agent(built, "look around", env=TurnEnvironment(on_event=events.append))
    assert result.stop_reason == "complete"
    assert [e for e in events if isinstance(e, SessionCompacted)]


async def test_a_failing_compaction_model_falls_back_to_trimming_with_a_warning() -> None:
    seen: list[int] = []

    def respond(request: ModelRequest) -> list[ModelEvent]:
        if request.purpose == "compaction":
            raise RuntimeError("the summarizer is down")
        seen.append(context_tokens(request.system, request.messages))
        return text("noted " * 30)

    history, events = await _session(20, client=FunctionModel(respond, model_id="flaky"))
    failed = [e for e in events if isinstance(e, CompactionFailed)]
    assert failed and failed[0].data.fallback == "trim"
    assert "RuntimeError: the summarizer is down" in failed[0].data.error
    assert not [e for e in events if isinstance(e, SessionCompacted)]
    assert max(seen) <= THRESHOLD  # trimmed to the threshold instead
    assert len([m for m in history if isinstance(m, UserMessage)]) == 20


async def test_a_compaction_model_that_cannot_be_built_falls_back_too(tmp_path: Path) -> None:
    broken = Compaction(threshold_percent=50, model="offline/script:missing.json")
    _, events = await _session(20, compaction=broken, app_root=tmp_path)
    failed = [e for e in events if isinstance(e, CompactionFailed)]
    assert failed and "OfflineScriptError" in failed[0].data.error


async def test_the_compaction_instructions_replace_eves_prompt() -> None:
    systems: list[str] = []
    offline = OfflineTestModel()

    def respond(request: ModelRequest) -> Any:
        if request.purpose == "compaction":
            systems.append(request.system)
        return offline.stream(request)

    own = Compaction(threshold_percent=50, instructions="Summarize in one line.")
    await _session(15, client=FunctionModel(respond, model_id="offline/test"), compaction=own)
    assert systems and set(systems) == {"Summarize in one line."}
    systems.clear()
    await _session(15, client=FunctionModel(respond, model_id="offline/test"))
    assert systems and set(systems) == {INSTRUCTIONS}


async def test_a_summary_is_asked_for_no_more_than_the_kept_share_and_the_window() -> None:
    limits: list[int | None] = []
    offline = OfflineTestModel()

    def respond(request: ModelRequest) -> Any:
        if request.purpose == "compaction":
            limits.append(request.max_output_tokens)
        return offline.stream(request)

    await _session(15, client=FunctionModel(respond, model_id="offline/test"))
    assert limits and set(limits) == {THRESHOLD // 4}  # the kept messages' share of it
    large = policy_for(Compaction(threshold_percent=80), model_id="m", window_tokens=200_000)
    small = policy_for(Compaction(threshold_percent=90), model_id="m", window_tokens=8192)
    assert large is not None and small is not None
    assert large.summary_tokens(150_000) == SUMMARY_MAX_TOKENS
    assert small.summary_tokens(7000) == 8192 - 7000  # the room the window leaves
    assert small.summary_tokens(8190) == MIN_SUMMARY_TOKENS


async def test_a_recorded_compaction_is_replayed_not_asked_again() -> None:
    asked: list[str] = []
    offline = OfflineTestModel()

    def respond(request: ModelRequest) -> Any:
        asked.append(request.purpose)
        return offline.stream(request)

    client = FunctionModel(respond, model_id="offline/test")
    built = agent_setup(client, compaction=COMPACT, context_window_tokens=WINDOW)
    history: list[Message] = []
    for n in range(30):
        before = history
        recorder = JsonRecorder()
        env = TurnEnvironment(recorder=recorder)
        first = await run_agent(built, _long(n), history=before, env=env)
        history = first.messages
        if "compact:0" in recorder.produced:
            break
    assert "compact:0" in recorder.produced
    asked.clear()
    env = TurnEnvironment(recorder=JsonRecorder(recorder.log))
    again = await run_agent(built, _long(n), history=before, env=env)
    assert asked == []
    assert again.messages == first.messages


def test_a_model_with_no_known_window_never_compacts_and_says_so_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="eve.compaction"):
        for _ in range(3):
            policy = policy_for(COMPACT, model_id="acme/unknown-model", window_tokens=None)
            assert policy is not None and policy.threshold_tokens is None
    warned = [r for r in caplog.records if "acme/unknown-model" in r.getMessage()]
    assert len(warned) == 1
    assert "falls back to trimming" in warned[0].getMessage()


def test_the_table_knows_model_families_and_the_override_wins() -> None:
    sonnet = known_window("anthropic/claude-sonnet-4-5-20250929")
    assert sonnet is not None and sonnet.tokens == 200_000
    assert known_window("offline/script:s.json") == known_window("offline/script")
    assert known_window("acme/model") is None
    override = window_for("anthropic/claude-sonnet-4-5", 50_000)
    assert override is not None and override.tokens == 50_000
    assert override.source == "model_context_window_tokens"
    assert override.max_output_tokens == 64_000
    assert window_for("acme/model", None) is None


def test_a_model_id_finds_its_longest_family_in_the_table() -> None:
    # a family is the id itself or a start of it that ends before a "-" or a ":"
    for key, window in KNOWN_WINDOWS.items():
        assert known_window(key) is window
        assert known_window(f"{key}-20250929") is window
        assert known_window(f"{key}:script.json") is window
        assert known_window(f"{key}x") is not window  # not a family: "gpt-4o" is not "gpt-4"
    # the longest family wins: opus 4.1 is not opus 4
    assert (
        known_window("anthropic/claude-opus-4-1-20250805")
        is KNOWN_WINDOWS["anthropic/claude-opus-4-1"]
    )
    assert known_window("openai/gpt-5-mini") is KNOWN_WINDOWS["openai/gpt-5"]
    assert known_window("") is None
    assert known_window("openai/") is None
