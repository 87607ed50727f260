"""The translation of eve's events into UI message stream chunks, for the events a Node test
of the channel does not reach (typed output, a failed turn, a retry, a subagent, a
question); each sequence is then read by the ``ai`` package, so it must pass its schemas."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from eve._usage import TokenUsage
from eve.channels.ai_sdk_stream import DONE, Segment, sse
from eve.events import (
    ActionPartialData,
    ActionRequest,
    ActionResultData,
    ActionsRequestedData,
    EventData,
    EventMeta,
    InputRequestedData,
    MessageAppendedData,
    ModelRetryingData,
    Option,
    ParentLink,
    QuestionRequest,
    SessionEvent,
    StepCompletedData,
    StepStartedData,
    TurnCompletedData,
    TurnFailedData,
    TurnWaitingData,
    event_of,
)
from tests.channels.ai_sdk.harness import NodeClient, node_client

SESSION, TURN = "ses_x", "turn_0"


def events(*data: EventData) -> list[SessionEvent]:
    return [
        event_of(d, EventMeta(id=f"evt_{i}", at="2026-01-01T00:00:00Z", index=i))
        for i, d in enumerate(data)
    ]


def chunks(log: list[SessionEvent], *, parked_before: int = 0) -> list[dict[str, Any]]:
    segment = Segment(session_id=SESSION, turn_id=TURN, parked_before=parked_before)
    found = segment.begin()
    for event in log:
        found += segment.translate(event)
        if segment.ended:
            break
    return found


@pytest.fixture(scope="module")
def node() -> Iterator[NodeClient]:
    yield from node_client()


def read_in_node(node: NodeClient, *sequences: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return node.validate([b"".join(map(sse, s)).decode() + DONE.decode() for s in sequences])


step = StepStartedData(turn_id=TURN)
done = StepCompletedData(turn_id=TURN, finish_reason="end_turn", usage=TokenUsage())


def said(text: str) -> MessageAppendedData:
    return MessageAppendedData(turn_id=TURN, message_delta=text)


def completed(output: Any = None) -> TurnCompletedData:
    return TurnCompletedData(
        turn_id=TURN, stop_reason="complete", usage=TokenUsage(), output=output
    )


def test_typed_output_a_failure_a_retry_and_a_subagent_read_by_the_ai_package(
    node: NodeClient,
) -> None:
    typed = chunks(events(step, said("ok"), done, completed({"answer": 42})))
    assert [c["type"] for c in typed[-3:]] == ["finish-step", "data-output", "finish"]
    failed = chunks(events(step, said("half"), TurnFailedData(turn_id=TURN, error="Boom: no")))
    assert [c["type"] for c in failed[-3:]] == ["finish-step", "error", "finish"]
    assert failed[-1]["finishReason"] == "error"
    retry = ModelRetryingData(turn_id=TURN, retry=1, delay=0.5, reason="overloaded")
    retried = chunks(events(step, said("lo"), retry, said("hello"), done, completed()))
    assert [c["type"] for c in retried].count("text-start") == 2
    link = ParentLink(session_id=SESSION, call_id="call_1")
    sub = MessageAppendedData(
        session_id="ses_sub", node_id="helper", parent=link, message_delta="x"
    )
    nested = chunks(events(step, sub, done, completed()))
    assert [c["type"] for c in nested if c["type"].startswith("text")] == []
    assert any(c["type"] == "data-eve" and c["data"]["data"]["node_id"] for c in nested)

    read_typed, read_failed, read_retried, read_nested = read_in_node(
        node, typed, failed, retried, nested
    )
    assert {"type": "data-output", "id": TURN, "data": {"answer": 42}} in read_typed["message"][
        "parts"
    ]
    assert read_failed == {"error": "Boom: no"}
    texts = [p["text"] for p in read_retried["message"]["parts"] if p["type"] == "text"]
    assert texts == ["lo", "hello"]  # the void text stays: the message cannot take it back
    assert not [p for p in read_nested["message"]["parts"] if p["type"] == "text"]


def test_a_question_is_data_and_a_past_park_goes_on(node: NodeClient) -> None:
    call = ActionRequest(call_id="call_1", name="deploy", input={})
    question = QuestionRequest(
        request_id="req_1",
        tool_name="deploy",
        call_id="call_1",
        question="Which region?",
        task_id="task_1",
        options=[Option(id="eu", label="EU")],
    )
    log = events(
        step,
        ActionsRequestedData(turn_id=TURN, actions=[call]),
        InputRequestedData(turn_id=TURN, requests=[question]),
        TurnWaitingData(turn_id=TURN, on="input"),
        ActionPartialData(turn_id=TURN, call_id="call_1", name="deploy", partial={"pct": 50}),
        ActionResultData(
            turn_id=TURN, call_id="call_1", name="deploy", status="completed", output="ok"
        ),
        done,
        completed(),
    )
    parked = chunks(log)  # the wait is the turn's end now: the segment finishes there
    assert [c["type"] for c in parked[-4:]] == [
        "tool-input-available",
        "data-eve",
        "finish-step",
        "finish",
    ]
    assert parked[-3]["data"]["data"]["requests"][0]["question"] == "Which region?"
    replayed = chunks(log, parked_before=len(log))  # a replay passes a park the turn left
    types = [c["type"] for c in replayed]
    assert types[-4:] == ["tool-output-available", "tool-output-available", "finish-step", "finish"]
    assert replayed[-4]["preliminary"] is True
    [read_parked, read_replayed] = read_in_node(node, parked, replayed)
    [tool] = [p for p in read_replayed["message"]["parts"] if p["type"] == "tool-deploy"]
    assert (tool["state"], tool["output"]) == ("output-available", "ok")
    [asked] = [p for p in read_parked["message"]["parts"] if p["type"] == "tool-deploy"]
    assert asked["state"] == "input-available"
