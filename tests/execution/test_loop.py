"""run_agent: stop reasons, tool results of every kind, approvals, cancellation, transcript."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from eve._cancellation import CancelSignal
from eve.context import define_state
from eve.errors import EmptyModelResponse, TranscriptWriteFailed
from eve.events import SessionEvent
from eve.execution.tool_calls import ApprovalRequest
from eve.execution.transcript import load_transcript
from eve.messages import ToolCall, ToolResultMessage, assistant_message, tool_result, user_message
from eve.models.events import Done, TextDelta, TokenUsage
from eve.models.function import FunctionModel
from eve.tools import define_tool, tool
from eve.tools.approval import always, once
from tests.execution.helpers import Script, calls, live, text, turn


class Item(BaseModel):
    item: str


@tool
def price(item: str) -> dict[str, Any]:
    """Price of an item."""
    if item == "boom":
        raise RuntimeError("catalog offline")
    return {"item": item, "price": 3}


PRICE = live("price", price)


async def run(script: Script, tools: list[Any] | None = None, **kwargs: Any):  # type: ignore[no-untyped-def]
    events: list[SessionEvent] = []
    result = await turn(
        client=FunctionModel(script),
        system="sys",
        tools=tools or [PRICE],
        user_message="hi",
        on_event=events.append,
        **kwargs,
    )
    return result, events


async def test_text_answer_completes() -> None:
    result, events = await run(Script(text("hello", TokenUsage(input_tokens=5, output_tokens=1))))
    assert result.stop_reason == "complete"
    assert result.messages == [user_message("hi"), assistant_message("hello")]
    assert result.usage == TokenUsage(input_tokens=5, output_tokens=1)
    assert [e.type for e in events] == [
        "turn.started",
        "message.received",
        "step.started",
        "message.appended",
        "message.completed",
        "step.completed",
        "turn.completed",
    ]
    assert [e.meta.index for e in events] == list(range(7))
    assert all(e.data.turn_id == "turn_0" and e.meta.id.startswith("evt_") for e in events)


async def test_tool_turn_has_the_eve_event_sequence() -> None:
    result, events = await run(Script(calls(("price", {"item": "nail"})), text("3 EUR")))
    assert result.stop_reason == "complete"
    assert result.messages[1] == assistant_message(
        tool_calls=[ToolCall(id="c0", name="price", input={"item": "nail"})]
    )
    assert result.messages[2] == tool_result("c0", '{"item":"nail","price":3}', name="price")
    assert [e.type for e in events] == [
        "turn.started",
        "message.received",
        "step.started",
        "actions.requested",
        "action.result",
        "step.completed",
        "step.started",
        "message.appended",
        "message.completed",
        "step.completed",
        "turn.completed",
    ]
    done = next(e for e in events if e.type == "action.result")
    assert (done.data.status, done.data.step_index) == ("completed", 0)


async def test_max_turns_stops_a_model_that_keeps_calling() -> None:
    script = Script(*[calls(("price", {"item": "a"}), prefix=f"s{i}-") for i in range(3)])
    result, _ = await run(script, max_turns=2)
    assert result.stop_reason == "max_turns"
    assert script.count == 2


async def test_every_failure_becomes_an_error_result_and_the_loop_goes_on() -> None:
    gated = live(
        "gated",
        define_tool(
            description="Gated.", input_schema=Item, execute=lambda d, c: "ran", approval=always()
        ),
    )
    script = Script(
        calls(
            ("price", {"item": 5}),
            ("nope", {}),
            ("gated", {"item": "x"}),
            ("price", {"item": "boom"}),
        ),
        text("sorry"),
    )
    result, events = await run(script, tools=[PRICE, gated], approve=lambda request: False)
    results = [m for m in result.messages if isinstance(m, ToolResultMessage)]
    assert [r.tool_call_id for r in results] == ["c0", "c1", "c2", "c3"]
    assert all(r.is_error for r in results)
    assert "item: Input should be a valid string" in results[0].content
    assert results[1].content == "unknown tool 'nope' (available: gated, price)"
    assert results[2].content == "gated needs approval and a person denied this call"
    assert results[3].content == "RuntimeError: catalog offline"
    statuses = [e.data.status for e in events if e.type == "action.result"]
    assert statuses == ["failed", "failed", "rejected", "failed"]
    assert result.stop_reason == "complete" and result.final_text == "sorry"


async def test_approval_hook_that_raises_closes_every_pending_call(tmp_path: Path) -> None:
    ran: list[str] = []
    gated = live(
        "gated",
        define_tool(
            description="G.",
            input_schema=Item,
            execute=lambda d, c: ran.append(d.item),
            approval=always(),
        ),
    )

    def broken(request: ApprovalRequest) -> bool:
        raise ConnectionError("approval service down")

    transcript = tmp_path / "t.jsonl"
    with pytest.raises(ConnectionError, match="approval service down"):
        await run(
            Script(calls(("gated", {"item": "a"}), ("gated", {"item": "b"}))),
            tools=[gated],
            approve=broken,
            transcript=transcript,
        )
    assert ran == []
    saved = load_transcript(transcript)
    results = [m for m in saved if isinstance(m, ToolResultMessage)]
    assert [r.tool_call_id for r in results] == ["c0", "c1"]
    assert all(r.is_error and "approval failed" in r.content for r in results)


async def test_once_asks_until_approved_once_and_policies_decide() -> None:
    asked: list[str] = []
    onetime = live(
        "onetime",
        define_tool(
            description="O.", input_schema=Item, execute=lambda d, c: "ok", approval=once()
        ),
    )
    policy = live(
        "policy",
        define_tool(
            description="P.",
            input_schema=Item,
            execute=lambda d, c: "ok",
            approval=lambda d: "approved" if d.item == "safe" else "denied",
        ),
    )

    def approve(request: ApprovalRequest) -> bool:
        asked.append(request.tool_name)
        return True

    script = Script(
        calls(
            ("onetime", {"item": "a"}),
            ("onetime", {"item": "b"}),
            ("policy", {"item": "safe"}),
            ("policy", {"item": "rm"}),
        ),
        text("ok"),
    )
    result, _ = await run(script, tools=[onetime, policy], approve=approve)
    assert asked == ["onetime"]
    contents = [m.content for m in result.messages if isinstance(m, ToolResultMessage)]
    assert contents == ["ok", "ok", "ok", "the approval policy of policy denied this call"]


async def test_no_approver_means_denied() -> None:
    gated = live(
        "gated",
        define_tool(
            description="G.", input_schema=Item, execute=lambda d, c: "ran", approval=always()
        ),
    )
    result, _ = await run(Script(calls(("gated", {"item": "a"})), text("ok")), tools=[gated])
    [denied] = [m for m in result.messages if isinstance(m, ToolResultMessage)]
    assert (
        denied.content
        == "gated needs approval and no one can approve here, so eve denied this call"
    )


async def test_empty_response_raises_before_recording(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    with pytest.raises(EmptyModelResponse, match="neither text nor tool calls"):
        await run(Script([Done(stop_reason="end_turn")]), transcript=transcript)
    assert load_transcript(transcript) == [user_message("hi")]


async def test_cancel_before_the_first_request_calls_no_model() -> None:
    signal = CancelSignal()
    signal.cancel()
    script = Script(text("never"))
    result, events = await run(script, signal=signal)
    assert result.stop_reason == "aborted"
    assert script.count == 0
    assert events[-1].type == "turn.cancelled"


async def test_cancel_mid_stream_records_no_partial_message() -> None:
    signal = CancelSignal()

    async def stream(request: object):  # type: ignore[no-untyped-def]
        yield TextDelta(text="part")
        signal.cancel("user")
        yield TextDelta(text="more")
        yield Done(stop_reason="end_turn")

    result = await turn(
        client=FunctionModel(stream), system="s", tools=[], user_message="hi", signal=signal
    )
    assert result.stop_reason == "aborted"
    assert result.messages == [user_message("hi")]


async def test_cancel_during_a_tool_keeps_its_result_and_closes_the_rest() -> None:
    signal = CancelSignal()

    async def slow(data: Item, ctx: Any) -> str:
        signal.cancel("user")
        await asyncio.sleep(0)
        return f"finished {data.item}"

    slow_tool = live("slow", define_tool(description="S.", input_schema=Item, execute=slow))
    script = Script(calls(("slow", {"item": "a"}), ("slow", {"item": "b"})), text("never"))
    result, _ = await run(script, tools=[slow_tool], signal=signal)
    assert result.stop_reason == "aborted"
    results = [m for m in result.messages if isinstance(m, ToolResultMessage)]
    assert [(r.content, r.is_error) for r in results] == [
        ("finished a", False),
        ("aborted before execution", True),
    ]
    assert script.count == 1


async def test_projection_partials_and_ends_turn() -> None:
    async def progress(data: Item, ctx: Any):  # type: ignore[no-untyped-def]
        yield {"done": 1}
        yield {"done": 2, "item": data.item}

    streaming = live(
        "progress",
        define_tool(
            description="P.",
            input_schema=Item,
            execute=progress,
            to_model_output=lambda r: f"finished {r['item']}",
        ),
    )
    final = live(
        "final",
        define_tool(
            description="F.", input_schema=Item, execute=lambda d, c: "bye", ends_turn=True
        ),
    )
    script = Script(calls(("progress", {"item": "x"}), ("final", {"item": "y"})), text("unused"))
    result, events = await run(script, tools=[streaming, final])
    assert [e.data.partial for e in events if e.type == "action.partial"] == [
        {"done": 1},
        {"done": 2, "item": "x"},
    ]
    contents = [m.content for m in result.messages if isinstance(m, ToolResultMessage)]
    assert contents == ["finished x", "bye"]
    assert result.stop_reason == "complete" and script.count == 1


async def test_each_message_is_on_disk_before_the_loop_continues(tmp_path: Path) -> None:
    transcript = tmp_path / "session.jsonl"
    seen: list[int] = []

    def spy(data: Item, ctx: Any) -> str:
        seen.append(len(load_transcript(transcript)))
        return "ok"

    tool_ = live("spy", define_tool(description="S.", input_schema=Item, execute=spy))
    result, _ = await run(
        Script(calls(("spy", {"item": "a"})), text("done")), tools=[tool_], transcript=transcript
    )
    assert seen == [2]  # user + assistant were saved before the tool ran
    assert load_transcript(transcript) == result.messages
    lines = transcript.read_text().splitlines()
    assert lines[0] == '{"role":"user","parts":[{"type":"text","text":"hi"}]}'
    assert '"parts":[{"type":"tool-call","id":"c0","name":"spy","input":{"item":"a"}}]' in lines[1]


async def test_transcript_write_failure_fails_the_run(tmp_path: Path) -> None:
    blocked = tmp_path / "dir.jsonl"
    blocked.mkdir()
    with pytest.raises(TranscriptWriteFailed, match="could not append"):
        await run(Script(text("hello")), transcript=blocked)


async def test_prior_messages_continue_the_conversation() -> None:
    prior = [user_message("earlier"), assistant_message("noted")]
    model = FunctionModel(Script(text("again")))
    result = await turn(client=model, system="s", tools=[], user_message="hi", messages=prior)
    assert model.requests[0].messages == [*prior, user_message("hi")]
    assert result.messages[:2] == prior


async def test_state_lives_in_the_session_context() -> None:
    counter = define_state("test.loop.counter", 0)
    bump = live(
        "bump",
        define_tool(
            description="B.",
            input_schema=Item,
            execute=lambda d, c: counter.update(lambda n: n + 1),
        ),
    )
    result, _ = await run(
        Script(calls(("bump", {"item": "a"}), ("bump", {"item": "b"})), text("ok")), tools=[bump]
    )
    assert [m.content for m in result.messages if isinstance(m, ToolResultMessage)] == ["1", "2"]


async def test_a_cancelled_task_is_not_a_failed_turn() -> None:
    """Task cancellation is a process stopping (a durable turn resumes after the restart):
    the turn ends with no event claiming an outcome, and the cancellation propagates."""
    started = asyncio.Event()

    async def stream(request: object):  # type: ignore[no-untyped-def]
        started.set()
        await asyncio.Event().wait()  # a model that is still answering when the process stops
        yield Done(stop_reason="end_turn")

    events: list[SessionEvent] = []
    task = asyncio.create_task(
        turn(
            client=FunctionModel(stream),
            system="s",
            tools=[],
            user_message="hi",
            on_event=events.append,
        )
    )
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [e.type for e in events] == ["turn.started", "message.received", "step.started"]
