"""Retries through the real ``anthropic`` and ``openai`` SDKs against the loopback server.

What the server sends stands for what the providers document: Anthropic answers 429
``rate_limit_error`` with a ``retry-after`` header and 529 ``overloaded_error``, and may
send an ``error`` event inside a 200 stream after content has started ("Errors",
https://docs.anthropic.com/en/api/errors; "Streaming Messages", error events,
https://docs.anthropic.com/en/api/messages-streaming); OpenAI answers 429 with
``retry-after-ms``/``retry-after`` headers and 5xx on server errors ("Error codes",
https://platform.openai.com/docs/guides/error-codes; "Rate limits",
https://platform.openai.com/docs/guides/rate-limits). Delays are asserted on what the
``Retrying`` event reports, never on wall time.
"""

from __future__ import annotations

import dataclasses
import json
import socket

import pytest

from eve._cancellation import CancelSignal
from eve.errors import (
    ModelAuthError,
    ModelConnectionError,
    ModelHTTPError,
    ModelRetriesExhausted,
)
from eve.events import SessionEvent
from eve.execution import RunResult, TurnEnvironment, agent_setup, run_agent
from eve.manifest import AgentConfig, Retries
from eve.messages import AssistantMessage, user_message
from eve.models.anthropic import AnthropicModel
from eve.models.base import ModelRequest
from eve.models.events import Done, ModelEvent, Retrying, TextDelta
from eve.models.openai import OpenAIModel
from tests.models.anthropic_script import end, start, text_block
from tests.models.openai_script import chunk, text
from tests.models.sse_server import Reply, ScriptedServer, anthropic_sse, json_reply, openai_sse

KEY = "sk-ant-test-SECRET-1234567890"
#: short waits, so the tests do not sleep; the delay reported is still checked
FAST = Retries(attempts=3, max_delay_seconds=0.01)


def claude(server: ScriptedServer) -> AnthropicModel:
    return AnthropicModel("claude-test", api_key=KEY, base_url=server.url)


def gpt(server: ScriptedServer) -> OpenAIModel:
    return OpenAIModel("gpt-test", api_key=KEY, base_url=server.url)


def request(retries: Retries = FAST, signal: CancelSignal | None = None) -> ModelRequest:
    return ModelRequest(
        system="Be brief.",
        messages=[user_message("hi")],
        retries=retries,
        signal=signal or CancelSignal(),
    )


async def collect(
    client: AnthropicModel | OpenAIModel, req: ModelRequest | None = None
) -> list[ModelEvent]:
    return [event async for event in client.stream(req or request())]


def anthropic_error(status: int, kind: str, headers: dict[str, str] | None = None) -> Reply:
    reply = json_reply(status, {"type": "error", "error": {"type": kind, "message": kind}})
    reply.headers.update(headers or {})
    return reply


def anthropic_hello() -> Reply:
    return anthropic_sse([start(), *text_block(0, "Hello"), *end("end_turn")])


def openai_hello() -> Reply:
    return openai_sse([text("Hello"), chunk(finish="stop")])


def in_stream_error(kind: str) -> Reply:
    """A 200 stream that starts a text block, then reports ``kind`` as an ``error`` event."""
    reply = anthropic_sse([start(), *text_block(0, "par")[:2]])
    error = {"type": "error", "error": {"type": kind, "message": "Overloaded"}}
    reply.chunks.append(f"event: error\ndata: {json.dumps(error)}\n\n".encode())
    return reply


def retries_of(events: list[ModelEvent]) -> list[Retrying]:
    return [e for e in events if isinstance(e, Retrying)]


# --- Anthropic -----------------------------------------------------------------------------


async def test_overloaded_529_is_retried_then_succeeds(server: ScriptedServer) -> None:
    server.add(anthropic_error(529, "overloaded_error"), anthropic_hello())
    events = await collect(claude(server))
    [retry] = retries_of(events)
    assert retry.retry == 1
    assert 0 < retry.delay <= FAST.max_delay_seconds
    assert "HTTP 529" in retry.reason and "overloaded_error" in retry.reason
    after = events[events.index(retry) :]
    assert [e for e in after if isinstance(e, TextDelta)] == [TextDelta(text="Hello")]
    assert isinstance(events[-1], Done)
    assert len(server.requests) == 2


async def test_429_waits_what_retry_after_asks(server: ScriptedServer) -> None:
    server.add(anthropic_error(429, "rate_limit_error", {"retry-after": "1"}), anthropic_hello())
    events = await collect(claude(server), request(Retries(attempts=2, max_delay_seconds=30)))
    [retry] = retries_of(events)
    assert retry.delay == 1.0  # as asked: no backoff, no jitter
    assert isinstance(events[-1], Done)


async def test_error_event_inside_the_stream_restarts_the_call(server: ScriptedServer) -> None:
    server.add(in_stream_error("overloaded_error"), anthropic_hello())
    events = await collect(claude(server))
    assert events[0] == TextDelta(text="par")
    assert isinstance(events[1], Retrying) and "529" in events[1].reason
    assert events[2] == TextDelta(text="Hello")
    assert len(server.requests) == 2


async def test_connection_cut_mid_stream_is_retried(server: ScriptedServer) -> None:
    cut = anthropic_sse([start(), *text_block(0, "Hel", "lo")[:2]], cut=True)
    cut.chunks.append(b'event: content_block_delta\ndata: {"type": "content_bl')
    server.add(cut, anthropic_hello())
    events = await collect(claude(server))
    [retry] = retries_of(events)
    assert "connection" in retry.reason
    assert isinstance(events[-1], Done)


async def test_exhausted_retries_name_every_try(server: ScriptedServer) -> None:
    server.add(*(anthropic_error(529, "overloaded_error") for _ in range(3)))
    with pytest.raises(ModelRetriesExhausted) as caught:
        await collect(claude(server))
    error = caught.value
    assert (error.attempts, error.provider) == (3, "anthropic")
    assert len(error.failures) == 3 and all("HTTP 529" in f for f in error.failures)
    assert "gave up after 3 attempts (all 3 attempts failed)" in str(error)
    assert "1. anthropic: HTTP 529" in str(error) and "3. anthropic: HTTP 529" in str(error)
    assert isinstance(error.__cause__, ModelHTTPError)
    assert KEY not in str(error)
    assert len(server.requests) == 3


async def test_a_retry_after_longer_than_the_maximum_is_not_waited(
    server: ScriptedServer,
) -> None:
    server.add(anthropic_error(429, "rate_limit_error", {"retry-after": "120"}))
    with pytest.raises(ModelRetriesExhausted, match="asked to wait 120s") as caught:
        await collect(claude(server), request(Retries(attempts=4, max_delay_seconds=30)))
    assert caught.value.attempts == 1
    assert len(server.requests) == 1


async def test_cancel_ends_the_wait(server: ScriptedServer) -> None:
    server.add(anthropic_error(429, "rate_limit_error", {"retry-after": "20"}), anthropic_hello())
    signal = CancelSignal()
    seen: list[ModelEvent] = []
    async for event in claude(server).stream(request(Retries(max_delay_seconds=30), signal)):
        seen.append(event)
        if isinstance(event, Retrying):
            signal.cancel("user")
    assert [type(e) for e in seen] == [Retrying]
    assert seen[0].delay == 20.0  # type: ignore[union-attr]
    assert len(server.requests) == 1  # the 20 s were not waited: no second request


@pytest.mark.parametrize(
    ("status", "kind", "expected"),
    [(400, "invalid_request_error", ModelHTTPError), (401, "authentication_error", ModelAuthError)],
)
async def test_refusals_are_not_retried(
    server: ScriptedServer, status: int, kind: str, expected: type[ModelHTTPError]
) -> None:
    server.add(anthropic_error(status, kind), anthropic_hello())
    with pytest.raises(expected) as caught:
        await collect(claude(server))
    assert type(caught.value) is expected
    assert len(server.requests) == 1


async def test_attempts_1_turns_retrying_off(server: ScriptedServer) -> None:
    server.add(anthropic_error(529, "overloaded_error"), anthropic_hello())
    with pytest.raises(ModelHTTPError) as caught:
        await collect(claude(server), request(Retries(attempts=1)))
    assert type(caught.value) is ModelHTTPError and caught.value.status == 529
    assert len(server.requests) == 1


# --- the loop: a restarted call leaves no trace in the history -----------------------------


async def run_turn(client: AnthropicModel, events: list[SessionEvent]) -> RunResult:
    setup = agent_setup(client, instructions="Be brief.")
    agent = dataclasses.replace(setup.agent, config=AgentConfig(retries=FAST))
    env = TurnEnvironment(on_event=events.append)
    return await run_agent(dataclasses.replace(setup, agent=agent), "hi", env=env)


async def test_a_retried_turn_records_the_answer_once(server: ScriptedServer) -> None:
    server.add(in_stream_error("overloaded_error"), anthropic_hello())
    events: list[SessionEvent] = []
    result = await run_turn(claude(server), events)
    answers = [m for m in result.messages if isinstance(m, AssistantMessage)]
    assert [m.text for m in answers] == ["Hello"]
    types = [e.type for e in events]
    assert types.count("model.retrying") == 1
    assert types.index("model.retrying") < types.index("message.completed")
    [completed] = [e for e in events if e.type == "message.completed"]
    assert completed.data.message == "Hello"  # type: ignore[union-attr]
    [retrying] = [e for e in events if e.type == "model.retrying"]
    assert retrying.data.retry == 1  # type: ignore[union-attr]


async def test_exhausted_retries_fail_the_turn_with_the_named_error(
    server: ScriptedServer,
) -> None:
    server.add(*(anthropic_error(529, "overloaded_error") for _ in range(3)))
    events: list[SessionEvent] = []
    with pytest.raises(ModelRetriesExhausted):
        await run_turn(claude(server), events)
    [failed] = [e for e in events if e.type == "turn.failed"]
    assert failed.data.error.startswith("ModelRetriesExhausted: ")  # type: ignore[union-attr]
    assert [e.type for e in events].count("model.retrying") == 2


# --- OpenAI --------------------------------------------------------------------------------


def openai_error(status: int, headers: dict[str, str] | None = None) -> Reply:
    reply = json_reply(status, {"error": {"type": "server_error", "message": "busy", "code": None}})
    reply.headers.update(headers or {})
    return reply


async def test_openai_5xx_is_retried_then_succeeds(server: ScriptedServer) -> None:
    server.add(openai_error(503), openai_hello())
    events = await collect(gpt(server))
    [retry] = retries_of(events)
    assert "HTTP 503" in retry.reason
    assert events[-2] == TextDelta(text="Hello") and isinstance(events[-1], Done)


async def test_openai_429_waits_what_retry_after_ms_asks(server: ScriptedServer) -> None:
    server.add(openai_error(429, {"retry-after-ms": "5"}), openai_hello())
    events = await collect(gpt(server))
    [retry] = retries_of(events)
    assert retry.delay == 0.005


async def test_openai_cut_mid_stream_is_retried(server: ScriptedServer) -> None:
    cut = openai_sse([text("Hel")], done=False, cut=True)
    cut.chunks.append(b'data: {"id": "c1", "obj')
    server.add(cut, openai_hello())
    events = await collect(gpt(server))
    assert events[0] == TextDelta(text="Hel")
    assert isinstance(events[1], Retrying) and "connection" in events[1].reason
    assert events[2] == TextDelta(text="Hello")


async def test_openai_exhausted_and_refused(server: ScriptedServer) -> None:
    server.add(*(openai_error(500) for _ in range(3)))
    with pytest.raises(ModelRetriesExhausted) as caught:
        await collect(gpt(server))
    assert caught.value.attempts == 3 and caught.value.provider == "openai"
    server.add(json_reply(400, {"error": {"type": "invalid_request_error", "message": "no"}}))
    with pytest.raises(ModelHTTPError) as refused:
        await collect(gpt(server))
    assert type(refused.value) is ModelHTTPError and refused.value.status == 400
    assert len(server.requests) == 4


async def test_openai_unreachable_server_is_retried_then_named() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = OpenAIModel("gpt-test", api_key=KEY, base_url=f"http://127.0.0.1:{port}")
    with pytest.raises(ModelRetriesExhausted) as caught:
        await collect(client)
    assert isinstance(caught.value.__cause__, ModelConnectionError)
