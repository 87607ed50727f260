"""The ``ag_ui`` channel read with the ``ag-ui-protocol`` models, in process: every event
validates as AG-UI's, a failed turn is a ``RUN_ERROR``, a wrong answer or cancel is refused
before anything runs; and the view's translation of what the Node tests cannot reach
(reasoning, a model retry, events AG-UI has no name for)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest
from ag_ui.core import Event, EventType, RunErrorEvent, RunFinishedEvent
from pydantic import TypeAdapter

from eve import events as ev
from eve._usage import TokenUsage
from eve.channels.ag_ui_view import RunView
from eve.channels.declaration import ChannelDeclaration
from eve.channels.kind_modules import load_kind
from eve.errors import ChannelKindUnavailable
from tests.channels.ag_ui.apps import SOURCES
from tests.conftest import write_files
from tests.sessions.apps import SCRIPTED_AGENT, call, say
from tests.sessions.harness import script
from tests.sessions.inprocess import ROOT, InProcessServer

PATH = "/channels/ui"
TOKEN = "ag-ui-models-token"
EVENTS: TypeAdapter[Event] = TypeAdapter(Event)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessServer]:
    """Each session: a call of ``ship`` (approved by a person), its answer; a third request
    runs past the script, so its turn fails."""
    root = tmp_path_factory.mktemp("models")
    write_files(
        root,
        {
            "agent/agent.py": SCRIPTED_AGENT.replace("{limits}", "{'max_turns': 5}"),
            "agent/instructions.md": "Follow the script.\n",
            "agent/tools/ship.py": SOURCES["ship"],
        },
    )
    script(root, [call("ship", item="anvil"), say("shipped")])
    channel = ChannelDeclaration(name="ui", kind="ag_ui", path=PATH)
    env = {"EVE_API_TOKEN": TOKEN}
    started = InProcessServer(root, env=env, token=TOKEN, channels=[channel]).start()
    yield started
    started.stop()


def post(server: InProcessServer, path: str, body: Any, token: str = TOKEN) -> Any:
    assert server.http is not None
    headers = {"Authorization": f"Bearer {token}"}
    return server.http.post(ROOT + path, json=body, headers=headers)


def run(server: InProcessServer, body: dict[str, Any]) -> list[Event]:
    response = post(server, PATH, body)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return [
        EVENTS.validate_json(line.removeprefix("data: "))
        for line in response.text.splitlines()
        if line.startswith("data: ")
    ]


def user(thread: str, run_id: str, text: str, **more: Any) -> dict[str, Any]:
    message = {"id": f"{thread}-{run_id}", "role": "user", "content": text}
    return {"threadId": thread, "runId": run_id, "messages": [message], **more}


def test_every_event_is_ag_ui_and_a_failed_turn_is_a_run_error(server: InProcessServer) -> None:
    parked = run(server, user("t-fail", "r1", "ship it"))
    assert parked[0].type == EventType.RUN_STARTED
    assert (parked[0].thread_id, parked[0].run_id) == ("t-fail", "r1")  # type: ignore[union-attr]
    finished = parked[-1]
    assert isinstance(finished, RunFinishedEvent) and finished.outcome is not None
    [interrupt] = finished.outcome.interrupts  # type: ignore[union-attr]
    answer = {"interruptId": interrupt.id, "status": "resolved", "payload": "approve"}
    done = run(server, {"threadId": "t-fail", "runId": "r2", "messages": [], "resume": [answer]})
    assert isinstance(done[-1], RunFinishedEvent) and done[-1].outcome is None
    # the script has no third response: the next turn fails
    failed = run(server, user("t-fail", "r3", "and again"))
    assert isinstance(failed[-1], RunErrorEvent)
    assert failed[-1].code == "turn_failed" and "OfflineScriptError" in failed[-1].message
    assert EventType.STATE_SNAPSHOT not in [e.type for e in failed]


def test_a_wrong_answer_is_refused_before_anything_runs(server: InProcessServer) -> None:
    parked = run(server, user("t-wrong", "r1", "ship it"))
    shipped = server.app_root / "shipped.log"
    before = shipped.read_text() if shipped.exists() else ""
    [interrupt] = parked[-1].outcome.interrupts  # type: ignore[union-attr]
    wrong = [
        (interrupt.id, "resolved", {"optionId": "maybe"}, "input_option_unknown"),
        (interrupt.id, "resolved", 7, "invalid_body"),
        ("req_nothing", "resolved", "approve", "input_request_not_pending"),
        ("req_nothing", "cancelled", None, "input_request_not_pending"),
    ]
    for interrupt_id, status, payload, code in wrong:
        answer = {"interruptId": interrupt_id, "status": status, "payload": payload}
        body = {"threadId": "t-wrong", "runId": "r2", "messages": [], "resume": [answer]}
        refused = post(server, PATH, body)
        assert refused.json()["code"] == code, refused.text
    assert (shipped.read_text() if shipped.exists() else "") == before


def test_cancel_needs_the_token_and_a_thread(server: InProcessServer) -> None:
    refused = post(server, PATH + "/cancel", {"threadId": "t"}, token="wrong")
    assert (refused.status_code, refused.json()["code"]) == (401, "unauthorized")
    bad = post(server, PATH + "/cancel", {"thread": "t"})
    assert (bad.status_code, bad.json()["code"]) == (400, "invalid_body")
    refused = post(server, PATH, user("t", "r", "hi"), token="wrong")
    assert (refused.status_code, refused.json()["code"]) == (401, "unauthorized")


# --- the view, fed events directly ------------------------------------------------------


def logged(data: ev.EventData, index: int) -> ev.SessionEvent:
    meta = ev.EventMeta(id=f"evt_{index}", at="2026-01-01T00:00:00Z", index=index)
    return ev.event_of(data, meta)


def test_reasoning_a_retry_and_unnamed_events() -> None:
    turn = {"session_id": "ses_x", "turn_id": "turn_0"}
    step = {**turn, "step_index": 0}
    usage = TokenUsage(input_tokens=1, output_tokens=1)
    log = [
        ev.TurnStartedData(**turn),
        ev.MessageReceivedData(**turn, message="think"),
        ev.StepStartedData(**step),
        ev.ReasoningAppendedData(**step, reasoning_delta="hmm"),
        ev.MessageAppendedData(**step, message_delta="half"),
        ev.ModelRetryingData(**step, retry=1, delay=0.0, reason="overloaded"),
        ev.MessageAppendedData(**step, message_delta="whole"),
        ev.MessageCompletedData(**step, message="whole", finish_reason="end_turn"),
        ev.SkillLoadedData(**step, call_id="c", name="howto"),
        ev.StepCompletedData(**step, finish_reason="end_turn", usage=usage),
        ev.TurnCompletedData(**turn, stop_reason="complete", usage=usage, output={"n": 1}),
    ]
    view = RunView(thread_id="t", run_id="r", session_id="ses_x", turn_id="turn_0")
    out = [e for i, data in enumerate(log) for e in view.feed(logged(data, i))]
    for event in out:  # each as the wire has it
        EVENTS.validate_python(event.model_dump(by_alias=True))
    assert [(e.type.value, getattr(e, "message_id", None)) for e in out] == [
        ("STEP_STARTED", None),
        ("REASONING_START", "turn_0.step0.reasoning"),
        ("REASONING_MESSAGE_START", "turn_0.step0.reasoning"),
        ("REASONING_MESSAGE_CONTENT", "turn_0.step0.reasoning"),
        ("REASONING_MESSAGE_END", "turn_0.step0.reasoning"),
        ("REASONING_END", "turn_0.step0.reasoning"),
        ("TEXT_MESSAGE_START", "turn_0.step0"),
        ("TEXT_MESSAGE_CONTENT", "turn_0.step0"),
        ("TEXT_MESSAGE_END", "turn_0.step0"),
        ("CUSTOM", None),
        ("TEXT_MESSAGE_START", "turn_0.step0.retry1"),
        ("TEXT_MESSAGE_CONTENT", "turn_0.step0.retry1"),
        ("TEXT_MESSAGE_END", "turn_0.step0.retry1"),
        ("CUSTOM", None),
        ("STEP_FINISHED", None),
    ]
    customs = [e for e in out if e.type == EventType.CUSTOM]
    assert [c.name for c in customs] == ["eve:model.retrying", "eve:skill.loaded"]  # type: ignore[attr-defined]
    assert customs[1].value["name"] == "howto"  # type: ignore[attr-defined]
    assert isinstance(view.ending, RunFinishedEvent) and view.ending.result == {"n": 1}
    assert view.feed(logged(ev.SessionWaitingData(session_id="ses_x"), 99)) == []


def test_without_the_protocol_package_the_kind_is_a_named_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # as if ag-ui-protocol were not installed: importing it raises ImportError
    for name in [m for m in sys.modules if m == "ag_ui" or m.startswith("ag_ui.")]:
        monkeypatch.setitem(sys.modules, name, None)
    for name in ("eve.channels.kinds.ag_ui", "eve.channels.ag_ui_view"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.raises(ChannelKindUnavailable) as missing:
        load_kind("ag_ui")
    assert (missing.value.kind, missing.value.extra) == ("ag_ui", "ag-ui")  # as pip names it
    assert "pip install 'eve-durable[ag-ui]'" in str(missing.value)
    assert missing.value.exit_code == 2


def test_a_question_is_an_interrupt_and_an_ended_session_an_error() -> None:
    turn = {"session_id": "ses_x", "turn_id": "turn_1"}
    options = [ev.Option(id="red", label="Red"), ev.Option(id="blue", label="Blue")]
    question = ev.QuestionRequest(
        request_id="req_1",
        options=options,
        tool_name="paint",
        call_id="call_7",
        question="Which colour?",
        task_id="ses_x:turn_1:call_7",
    )
    log = [
        ev.TurnStartedData(**turn),
        ev.InputRequestedData(**turn, requests=[question]),
        ev.TurnWaitingData(**turn, on="input"),
    ]
    view = RunView(thread_id="t", run_id="r", session_id="ses_x", turn_id="turn_1")
    for i, data in enumerate(log):
        view.feed(logged(data, i))
    assert isinstance(view.ending, RunFinishedEvent) and view.ending.outcome is not None
    [interrupt] = view.ending.outcome.interrupts  # type: ignore[union-attr]
    assert (interrupt.id, interrupt.reason, interrupt.message) == (
        "req_1",
        "question",
        "Which colour?",
    )
    assert interrupt.response_schema is not None
    assert interrupt.response_schema["properties"]["optionId"]["enum"] == ["red", "blue"]
    # a run whose turn never began, because the session ended first
    waiting = RunView(thread_id="t", run_id="r2", session_id="ses_x", turn_id="turn_2")
    ended = ev.SessionCompletedData(session_id="ses_x", reason="session_timeout")
    assert waiting.feed(logged(ended, 0)) == []
    assert isinstance(waiting.ending, RunErrorEvent) and waiting.ending.code == "session_timeout"
