"""The ``openai`` channel, driven by the official ``openai`` SDK against the real app."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from openai import OpenAI

from bench.channel_probes import openai as openai_probe
from eve.channels.declaration import ChannelDeclaration
from tests.channels.agent_app import HELD, SHIPPED, TEA, restart_and_release, run_probe, write_app
from tests.conftest import wait_for_file
from tests.sessions.inprocess import ROOT, InProcessServer

TOKEN = "openai-channel-token"
MODEL = "tea"
CHANNEL = ChannelDeclaration(name=MODEL, kind="openai", path="/channels/tea", options={})
BENCH = ChannelDeclaration(
    name="bench", kind="openai", path="/channels/bench", options=openai_probe.OPTIONS
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessServer]:
    root = write_app(tmp_path_factory.mktemp("openai"))
    env = {"EVE_API_TOKEN": TOKEN}
    running = InProcessServer(root, env=env, token=TOKEN, channels=[CHANNEL, BENCH]).start()
    yield running
    running.stop()


def client_of(server: InProcessServer, api_key: str = TOKEN) -> OpenAI:
    return OpenAI(
        base_url=f"{ROOT}/channels/tea/v1",
        api_key=api_key,
        http_client=httpx.Client(transport=server.transport()),
        max_retries=0,
    )


@pytest.fixture
def client(server: InProcessServer) -> OpenAI:
    return client_of(server)


def session_count(server: InProcessServer) -> int:
    response = server.get("/sessions?limit=100")
    assert response.status_code == 200, response.text
    return len(response.json()["sessions"])


def event_types(server: InProcessServer, session_id: str) -> list[str]:
    return [e["type"] for e in server.events(session_id)]


def session_of(response_id: str) -> str:
    return response_id.split("_", 3)[3]


def text_of(events: list[Any]) -> str:
    return "".join(e.delta for e in events if e.type == "response.output_text.delta")


def test_models_lists_the_channel_model(client: OpenAI) -> None:
    assert [m.id for m in client.models.list()] == [MODEL]
    assert client.models.retrieve(MODEL).id == MODEL
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-5")


def test_a_chat_completion_answers_with_the_tool_call_kept_inside(
    client: OpenAI, server: InProcessServer
) -> None:
    raw = client.chat.completions.with_raw_response.create(
        model=MODEL, messages=[{"role": "user", "content": "what is tea?"}]
    )
    completion = raw.parse()
    [choice] = completion.choices
    assert choice.message.content == TEA
    assert choice.message.tool_calls is None
    assert choice.finish_reason == "stop"
    assert completion.usage is not None and completion.usage.total_tokens > 0
    # the tool ran inside eve, in the session the header names
    types = event_types(server, raw.headers["x-eve-session-id"])
    assert "action.result" in types and "turn.completed" in types


def test_a_streamed_chat_continues_its_session_and_answers_an_approval(
    client: OpenAI, server: InProcessServer
) -> None:
    first = client.chat.completions.with_raw_response.create(
        model=MODEL,
        messages=[
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "earlier"},
            {"role": "assistant", "content": "noted"},
            {"role": "user", "content": "what is tea?"},
        ],
        stream=True,
        stream_options={"include_usage": True},
    )
    session = {"x-eve-session-id": first.headers["x-eve-session-id"]}
    chunks = list(first.parse())
    said = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert said == TEA
    assert chunks[-1].usage is not None  # stream_options.include_usage
    # the history became the session's first message
    [received] = [
        e for e in server.events(session["x-eve-session-id"]) if e["type"] == "message.received"
    ]
    assert "assistant: noted" in received["data"]["message"]

    asked = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "ship it"}], extra_headers=session
    )
    content = asked.choices[0].message.content or ""
    assert "`ship`" in content and "approve, deny" in content
    # while the turn waits, a message that is no answer is refused, not queued
    with pytest.raises(openai.ConflictError) as refused:
        client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "hello?"}], extra_headers=session
        )
    assert refused.value.code == "answer_expected"
    assert refused.value.response.headers["x-should-retry"] == "false"  # SDKs retry a 409

    answered = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "approve"}], extra_headers=session
    )
    assert answered.choices[0].message.content == SHIPPED
    assert (server.app_root / "shipped.log").read_text() == "book\n"


def test_a_chat_sent_again_with_its_idempotency_key_answers_the_same_turn(
    client: OpenAI, server: InProcessServer
) -> None:
    # a client whose connection dropped before the answer sends the request again
    first = client.chat.completions.with_raw_response.create(
        model=MODEL,
        messages=[{"role": "user", "content": "what is tea?"}],
        extra_headers={"Idempotency-Key": "chat-once"},
    )
    again = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "what is tea?"}],
        extra_headers={"Idempotency-Key": "chat-once"},
    )
    assert again.id == first.parse().id and again.choices[0].message.content == TEA
    session_id = first.headers["x-eve-session-id"]
    assert event_types(server, session_id).count("turn.started") == 1
    with pytest.raises(openai.NotFoundError) as unknown:
        client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "hi"}],
            extra_headers={"x-eve-session-id": "ses_nobody"},
        )
    assert unknown.value.code == "session_not_found"


def test_a_response_continues_by_previous_id_and_takes_an_approval_item(
    client: OpenAI, server: InProcessServer
) -> None:
    first = client.responses.create(model=MODEL, input="what is tea?")
    assert (first.status, first.output_text) == ("completed", TEA)
    asked = client.responses.create(model=MODEL, input="ship it", previous_response_id=first.id)
    assert asked.status == "incomplete"
    [approval] = [item for item in asked.output if item.type == "mcp_approval_request"]
    assert (approval.name, approval.arguments) == ("ship", '{"item": "book"}')
    assert session_of(asked.id) == session_of(first.id)

    answered = client.responses.create(
        model=MODEL,
        previous_response_id=asked.id,
        input=[
            {"type": "mcp_approval_response", "approval_request_id": approval.id, "approve": False}
        ],
    )
    assert (answered.status, answered.output_text) == ("completed", SHIPPED)
    # denied: the tool did not run
    results = [e for e in server.events(session_of(first.id)) if e["type"] == "action.result"]
    assert results[-1]["data"]["name"] == "ship" and results[-1]["data"]["status"] != "ok"
    # the response is rebuilt from the log, as often as asked
    assert client.responses.retrieve(answered.id).output_text == SHIPPED


def test_a_failed_turn_is_an_error_the_sdk_does_not_retry(
    client: OpenAI, server: InProcessServer
) -> None:
    first = client.responses.create(model=MODEL, input="what is tea?")
    session_id = session_of(first.id)
    (server.app_root / f"release-{session_id}").write_text("go")  # hold returns at once
    latest = first
    for said in ("ship it", "deny", "hold on"):
        latest = client.responses.create(model=MODEL, input=said, previous_response_id=latest.id)
    assert latest.output_text == HELD
    failed = client.responses.create(model=MODEL, input="more", previous_response_id=latest.id)
    assert failed.status == "failed" and failed.error is not None
    assert failed.error.code == "turn_failed" and "offline script" in failed.error.message
    with pytest.raises(openai.InternalServerError) as chat_failed:
        client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "more"}],
            extra_headers={"x-eve-session-id": session_id},
        )
    assert chat_failed.value.code == "turn_failed"
    assert chat_failed.value.response.headers["x-should-retry"] == "false"


def test_a_dropped_stream_resumes_from_its_sequence_number(client: OpenAI) -> None:
    seen = []
    with client.responses.create(model=MODEL, input="what is tea?", stream=True) as events:
        for event in events:
            seen.append(event)
            if event.type == "response.output_text.delta":
                break  # the connection drops mid-answer
    rest = list(
        client.responses.retrieve(
            seen[0].response.id, stream=True, starting_after=seen[-1].sequence_number
        )
    )
    numbers = [e.sequence_number for e in seen + rest]
    assert numbers == list(range(len(numbers)))
    assert text_of(seen + rest) == TEA
    assert rest[-1].type == "response.completed"


def hold_turn(client: OpenAI, server: InProcessServer) -> tuple[str, list[Any]]:
    """A session at its third turn, whose ``hold`` runs; the stream's events so far."""
    first = client.responses.create(model=MODEL, input="what is tea?")
    asked = client.responses.create(model=MODEL, input="ship it", previous_response_id=first.id)
    answered = client.responses.create(model=MODEL, input="deny", previous_response_id=asked.id)
    seen = []
    with client.responses.create(
        model=MODEL, input="hold on", previous_response_id=answered.id, stream=True
    ) as events:
        for event in events:
            seen.append(event)
            if event.type == "response.in_progress":
                break
    wait_for_file(server.app_root / f"hold-{session_of(first.id)}.started")
    return seen[0].response.id, seen


def test_a_cancelled_response_ends_cancelled(client: OpenAI, server: InProcessServer) -> None:
    response_id, _ = hold_turn(client, server)
    cancelled = client.responses.cancel(response_id)
    assert cancelled.status == "cancelled"
    assert "turn.cancelled" in event_types(server, session_of(response_id))


@pytest.mark.parametrize(
    ("call", "error", "param"),
    [
        ({"messages": []}, openai.BadRequestError, "messages"),
        (
            {"messages": [{"role": "assistant", "content": "hi"}]},
            openai.BadRequestError,
            "messages[0]",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}
                ]
            },
            openai.BadRequestError,
            "messages[0].content[0]",
        ),
        (
            {"messages": [{"role": "user", "content": "hi"}], "model": "gpt-5"},
            openai.NotFoundError,
            "model",
        ),
    ],
)
def test_bad_chat_input_is_an_openai_error_and_stores_nothing(
    client: OpenAI,
    server: InProcessServer,
    call: dict[str, Any],
    error: type[Exception],
    param: str,
) -> None:
    before = session_count(server)
    with pytest.raises(error) as refused:
        client.chat.completions.create(**{"model": MODEL, **call})
    body = refused.value.body  # type: ignore[attr-defined]
    assert body["param"] == param and body["message"] and body["type"] == "invalid_request_error"
    assert session_count(server) == before


def test_a_response_id_not_given_out_is_not_found(client: OpenAI, server: InProcessServer) -> None:
    before = session_count(server)
    with pytest.raises(openai.NotFoundError) as refused:
        client.responses.create(model=MODEL, input="hi", previous_response_id="resp_made_up")
    assert refused.value.code == "response_not_found"
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve("resp_0_0_ses_nobody")
    assert session_count(server) == before


def test_a_wrong_key_is_refused(server: InProcessServer) -> None:
    with pytest.raises(openai.AuthenticationError) as refused:
        client_of(server, api_key="wrong").models.list()
    assert refused.value.code == "invalid_api_key"


def test_a_turn_survives_a_restart_and_the_stream_resumes(
    client: OpenAI, server: InProcessServer
) -> None:
    response_id, seen = hold_turn(client, server)
    restart_and_release(server, session_of(response_id))
    rest = list(
        client_of(server).responses.retrieve(
            response_id, stream=True, starting_after=seen[-1].sequence_number
        )
    )
    assert text_of(rest) == HELD
    assert rest[-1].type == "response.completed"


def test_the_bench_probe_times_a_streamed_turn(server: InProcessServer) -> None:
    measured = run_probe(server, openai_probe.probe, "/channels/bench")
    assert measured.first_byte > 0
    # the role chunk, the answer's words, the finish chunk and [DONE]
    assert len(measured.gaps) >= len(TEA.split()) + 2
