"""The fold of a turn's events into an A2A task: what a stream sends and a snapshot keeps."""

from __future__ import annotations

import itertools
import sys
from typing import Any, cast

import pytest
from a2a.helpers import get_data_parts, get_message_text
from a2a.types import TaskArtifactUpdateEvent, TaskState, TaskStatusUpdateEvent
from a2a.utils.errors import TaskNotFoundError

from eve._usage import TokenUsage
from eve.channels.a2a_tasks import TaskRef, TurnView, parse_task_id, request_prompt
from eve.channels.kinds.a2a import Options, routes
from eve.channels.mount import ChannelMount
from eve.errors import ChannelKindUnavailable
from eve.events import (
    EventData,
    EventMeta,
    InputRequestedData,
    InputResolvedData,
    MessageAppendedData,
    MessageCompletedData,
    ModelRetryingData,
    Option,
    ParentLink,
    QuestionRequest,
    SessionEvent,
    ToolApprovalRequest,
    TurnCompletedData,
    TurnFailedData,
    TurnStartedData,
    event_of,
)
from eve.server.auth import token_authenticator

SESSION = "ses_abc-DEF_123"
REF = TaskRef(session_id=SESSION, turn_id="turn_1")
_index = itertools.count()


def event(data: EventData) -> SessionEvent:
    n = next(_index)
    meta = EventMeta(id=f"evt_{n}", at="2026-12-05T03:30:00.000Z", index=n)
    return event_of(data, meta)


def fold(view: TurnView, *data: EventData) -> list[Any]:
    return [update for d in data for update in view.apply(event(d))]


def mine(**fields: Any) -> dict[str, Any]:
    return {"session_id": SESSION, "turn_id": REF.turn_id, **fields}


def test_a_task_id_is_its_session_and_turn_and_nothing_else_parses() -> None:
    assert parse_task_id(f"{SESSION}:turn_12") == TaskRef(SESSION, "turn_12")
    assert parse_task_id(f"{SESSION}:turn_12").number == 12
    for wrong in ("turn_1", f"{SESSION}:turn-1", f"{SESSION}:turn_1:x", "ses_:turn_1"):
        with pytest.raises(TaskNotFoundError):
            parse_task_id(wrong)


def test_a_retried_step_empties_its_text_and_the_completed_text_replaces_it() -> None:
    view = TurnView(REF)
    updates = fold(
        view,
        TurnStartedData(**mine()),
        MessageAppendedData(**mine(step_index=0, message_delta="draft")),
        ModelRetryingData(**mine(step_index=0, retry=1, delay=0.1, reason="overloaded")),
        MessageCompletedData(**mine(step_index=0, message="final", finish_reason="end_turn")),
    )
    chunks = [u for u in updates if isinstance(u, TaskArtifactUpdateEvent)]
    assert [(c.artifact.parts[0].text, c.append, c.last_chunk) for c in chunks] == [
        ("draft", False, False),
        ("", False, False),
        ("final", False, True),
    ]
    assert view.task().artifacts[0].parts[0].text == "final"


def test_a_typed_answer_is_the_output_artifact_and_the_stop_reason_is_told() -> None:
    view = TurnView(REF)
    updates = fold(
        view,
        TurnCompletedData(**mine(stop_reason="max_turns", usage=TokenUsage(), output={"total": 3})),
    )
    artifact, status = updates
    assert isinstance(artifact, TaskArtifactUpdateEvent) and artifact.artifact.name == "output"
    assert get_data_parts(list(artifact.artifact.parts)) == [{"total": 3.0}]
    assert isinstance(status, TaskStatusUpdateEvent)
    assert status.status.state == TaskState.TASK_STATE_COMPLETED
    assert status.metadata["stopReason"] == "max_turns"


def test_a_question_is_input_required_with_its_options_and_a_failure_says_why() -> None:
    question = QuestionRequest(
        request_id="inp_1",
        options=[Option(id="red", label="Red"), Option(id="blue", label="Blue")],
        tool_name="paint",
        call_id="call_0",
        question="Which colour?",
        task_id="t",
    )
    view = TurnView(REF)
    [asked] = fold(view, InputRequestedData(**mine(requests=[question])))
    assert view.waiting and list(view.pending) == ["inp_1"]
    assert get_message_text(asked.status.message).startswith("Which colour? Answer red, blue")
    [data] = get_data_parts(list(asked.status.message.parts))
    assert data["inputRequests"][0]["question"] == "Which colour?"
    assert data["inputRequests"][0]["requestId"] == "inp_1"
    assert request_prompt(question).endswith("(request inp_1).")
    [failed] = fold(view, TurnFailedData(**mine(error="ModelError: down")))
    assert failed.status.state == TaskState.TASK_STATE_FAILED and view.terminal
    assert get_message_text(failed.status.message) == "ModelError: down"


def approval(request_id: str) -> ToolApprovalRequest:
    return ToolApprovalRequest(
        request_id=request_id,
        options=[Option(id="approve", label="Approve"), Option(id="deny", label="Deny")],
        tool_name="ship",
        call_id=f"call_{request_id}",
        input={"item": "anvil"},
        rule="always",
    )


def test_a_subagents_requests_are_the_running_tasks_and_each_answer_says_what_waits() -> None:
    child = {
        "session_id": "ses_child",
        "turn_id": "turn_0",
        "node_id": "researcher",
        "parent": ParentLink(session_id=SESSION, call_id="call_0"),
    }
    view = TurnView(REF)
    # before the task runs, a subagent's request is an earlier turn's
    assert fold(view, InputRequestedData(**child, requests=[approval("inp_0")])) == []
    fold(view, TurnStartedData(**mine()))
    fold(view, InputRequestedData(**child, requests=[approval("inp_1"), approval("inp_2")]))
    assert view.waiting and list(view.pending) == ["inp_1", "inp_2"]
    [still] = fold(view, InputResolvedData(**child, request_id="inp_1", option_id="approve"))
    assert still.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert "inp_2" in get_message_text(still.status.message)
    assert "inp_1" not in get_message_text(still.status.message)
    [going] = fold(view, InputResolvedData(**child, request_id="inp_2", option_id="deny"))
    assert going.status.state == TaskState.TASK_STATE_WORKING
    assert [r.request_id for r in view.asked] == ["inp_1", "inp_2"]


def test_other_turns_and_subagents_events_are_not_the_tasks() -> None:
    view = TurnView(REF)
    other = {**mine(), "turn_id": "turn_2"}
    child = mine(parent=ParentLink(session_id="ses_parent", call_id="c"))
    assert fold(view, TurnStartedData(**other), TurnStartedData(**child)) == []
    assert view.state == TaskState.TASK_STATE_SUBMITTED


def test_an_a2a_channel_without_the_sdk_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "sse_starlette", None)  # as if never installed
    mount = ChannelMount(
        name="peers",
        path="/channels/peers",
        options=Options(),
        service=cast(Any, None),
        authenticate=token_authenticator(None),
    )
    with pytest.raises(ChannelKindUnavailable, match=r"pip install 'eve-durable\[a2a\]'") as error:
        routes(mount)
    assert (error.value.kind, error.value.extra) == ("a2a", "a2a")
    assert "'peers'" in str(error.value) and error.value.exit_code == 2
