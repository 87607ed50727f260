"""A turn's spans in process: the tree, the GenAI attributes, errors, content opt-in."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from eve._cancellation import CancelSignal
from eve.errors import ModelHTTPError
from eve.execution import TurnEnvironment, agent_setup, run_agent
from eve.manifest import Compaction
from eve.models.base import ModelRequest
from eve.models.events import ModelEvent, Retrying, TokenUsage
from eve.models.function import FunctionModel
from eve.tools import define_tool, tool
from eve.tracing.conventions import CAPTURE_CONTENT_ENV
from eve.tracing.turn_spans import SPANS
from tests.execution.helpers import Script, calls, live, text
from tests.tracing.conftest import by_name, reset_global_provider


@tool
def add(a: int, b: int) -> int:
    """Add two numbers (a sync tool: it runs in a thread), in a span of its own."""
    with trace.get_tracer("a tool's library").start_as_current_span("compute"):
        return a + b


# alone, after add: the spans of the step's calls follow each other
@tool(parallel=False)
def explode() -> str:
    """Always fails."""
    raise RuntimeError("the fuse was lit")


CACHED = TokenUsage(input_tokens=7, output_tokens=3, cache_read_tokens=100, cache_write_tokens=20)


async def _turn(*responses: list[ModelEvent], message: str = "add them") -> None:
    setup = agent_setup(
        FunctionModel(Script(*responses), model_id="anthropic/claude-test"),
        tools=[live("add", add), live("explode", explode)],
    )
    await run_agent(setup, message, env=TurnEnvironment(session_id="ses_trace"))


def _one(found: dict[str, list[ReadableSpan]], name: str) -> ReadableSpan:
    assert len(found[name]) == 1, [s.name for spans in found.values() for s in spans]
    return found[name][0]


@pytest.fixture
def no_content(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(CAPTURE_CONTENT_ENV, raising=False)
    # turns another test of this worker left running (a server stopped mid-turn: its turn
    # resumes in the next process, and its spans with it) are not this test's to judge
    before_turns, before_tasks = set(SPANS.turns), set(SPANS.tasks)
    yield
    left = (set(SPANS.turns) - before_turns, set(SPANS.tasks) - before_tasks)
    assert left == (set(), set()), "every turn's spans were let go"


async def test_a_turn_is_a_tree_of_agent_chat_and_tool_spans(
    spans: InMemorySpanExporter, no_content: None
) -> None:
    await _turn(
        calls(("add", {"a": 2, "b": 3}), ("explode", {})),
        text("5, and a failure", usage=CACHED),
    )
    found = by_name(spans.get_finished_spans())
    turn = _one(found, "invoke_agent")
    chats = found["chat claude-test"]
    add_span, explode_span = _one(found, "execute_tool add"), _one(found, "execute_tool explode")
    assert turn.parent is None and turn.kind == SpanKind.INTERNAL
    for child in [*chats, add_span, explode_span]:
        assert child.parent is not None and child.parent.span_id == turn.context.span_id
        assert child.context.trace_id == turn.context.trace_id
    assert turn.attributes is not None
    assert turn.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert turn.attributes["gen_ai.conversation.id"] == "ses_trace"
    assert turn.attributes["eve.turn.stop_reason"] == "complete"
    # the turn's tokens: both calls; input counts the cached tokens too
    assert turn.attributes["gen_ai.usage.input_tokens"] == 10 + 127
    assert turn.attributes["gen_ai.usage.cache_read.input_tokens"] == 100

    first, last = sorted(chats, key=lambda s: s.start_time or 0)
    assert first.kind == SpanKind.CLIENT
    assert dict(first.attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-test",
        "gen_ai.request.max_tokens": 4096,
        "eve.request.purpose": "turn",
        "eve.step.index": 0,
        "gen_ai.response.finish_reasons": ("tool_use",),
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 2,
        "gen_ai.usage.cache_read.input_tokens": 0,
        "gen_ai.usage.cache_creation.input_tokens": 0,
    }
    assert last.attributes is not None
    assert last.attributes["gen_ai.usage.input_tokens"] == 127
    assert last.attributes["gen_ai.usage.cache_creation.input_tokens"] == 20
    assert last.attributes["gen_ai.response.finish_reasons"] == ("end_turn",)

    # tools run in order, after the model asked for them and before the next call
    assert first.end_time is not None and add_span.start_time is not None
    assert first.end_time <= (add_span.end_time or 0) <= (explode_span.start_time or 0)
    assert (explode_span.end_time or 0) <= (last.start_time or 0)
    assert add_span.attributes is not None
    assert add_span.attributes["gen_ai.tool.name"] == "add"
    assert add_span.attributes["gen_ai.tool.call.id"] == "c0"
    assert add_span.attributes["gen_ai.conversation.id"] == "ses_trace"
    assert add_span.status.status_code == StatusCode.UNSET
    # the tool's own span is the tool call's child
    compute = _one(found, "compute")
    assert compute.parent is not None and compute.parent.span_id == add_span.context.span_id
    # a failed tool: status, error.type and the exception as an event
    assert explode_span.status.status_code == StatusCode.ERROR
    assert explode_span.attributes is not None
    assert explode_span.attributes["error.type"] == "RuntimeError"
    (exception,) = explode_span.events
    assert exception.name == "exception"
    attributes = dict(exception.attributes or {})
    stacktrace = str(attributes.pop("exception.stacktrace"))
    assert attributes == {
        "exception.type": "RuntimeError",
        "exception.message": "the fuse was lit",
    }
    # the tool's traceback (eve.execution.tracebacks), as the event of its result keeps it
    assert stacktrace.startswith("Traceback (most recent call last):\n")
    assert f'File "{__file__}"' in stacktrace and ", in explode\n" in stacktrace
    assert stacktrace.endswith("RuntimeError: the fuse was lit\n")
    # content is opt-in: no prompt, answer, argument or result anywhere
    for span in spans.get_finished_spans():
        assert not any(
            key.startswith(
                ("gen_ai.input", "gen_ai.output", "gen_ai.tool.call.a", "gen_ai.tool.call.r")
            )
            for key in span.attributes or {}
        ), span.name


async def test_a_failed_model_call_fails_its_span_and_the_turn(
    spans: InMemorySpanExporter, no_content: None
) -> None:
    def refuse(request: ModelRequest) -> list[ModelEvent]:
        raise ModelHTTPError("anthropic: HTTP 400: bad request", provider="anthropic", status=400)

    setup = agent_setup(FunctionModel(refuse, model_id="anthropic/claude-test"))
    with pytest.raises(ModelHTTPError):
        await run_agent(setup, "hi", env=TurnEnvironment(session_id="ses_fail"))
    found = by_name(spans.get_finished_spans())
    chat, turn = _one(found, "chat claude-test"), _one(found, "invoke_agent")
    for span in (chat, turn):
        assert span.status.status_code == StatusCode.ERROR
        assert (span.attributes or {})["error.type"] == "ModelHTTPError"
        (exception,) = span.events
        assert (exception.attributes or {})["exception.message"] == (
            "anthropic: HTTP 400: bad request"
        )


async def test_content_is_recorded_when_asked_and_secrets_never(
    spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-ant-api03-" + "x" * 40
    monkeypatch.setenv(CAPTURE_CONTENT_ENV, "true")
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    await _turn(calls(("add", {"a": 2, "b": 3})), text(f"5, says {secret}"), message="add 2 and 3")
    found = by_name(spans.get_finished_spans())
    turn, add_span = _one(found, "invoke_agent"), _one(found, "execute_tool add")
    attributes = dict(turn.attributes or {})
    assert json.loads(str(attributes["gen_ai.input.messages"])) == [
        {"role": "user", "parts": [{"type": "text", "content": "add 2 and 3"}]}
    ]
    output = json.loads(str(attributes["gen_ai.output.messages"]))
    assert output[0]["parts"][0]["content"] == "5, says [redacted]"
    tool_attributes = dict(add_span.attributes or {})
    assert json.loads(str(tool_attributes["gen_ai.tool.call.arguments"])) == {"a": 2, "b": 3}
    assert tool_attributes["gen_ai.tool.call.result"] == "5"
    chat = sorted(found["chat claude-test"], key=lambda s: s.start_time or 0)
    first = json.loads(str((chat[0].attributes or {})["gen_ai.output.messages"]))
    assert first[0]["parts"] == [
        {"type": "tool_call", "id": "c0", "name": "add", "arguments": {"a": 2, "b": 3}}
    ]
    everything = json.dumps([dict(s.attributes or {}) for s in spans.get_finished_spans()])
    assert secret not in everything


async def test_with_no_provider_set_nothing_is_kept(no_content: None) -> None:
    reset_global_provider()
    before = set(SPANS.turns)
    await _turn(calls(("add", {"a": 1, "b": 1})), text("2"))
    assert ("ses_trace", "turn_0") not in SPANS.turns and set(SPANS.turns) <= before


async def test_a_retried_call_is_one_span_and_a_cancelled_turn_no_error(
    spans: InMemorySpanExporter, no_content: None
) -> None:
    signal = CancelSignal()

    def retry_then_stop(request: ModelRequest) -> list[ModelEvent]:
        # the provider failed once and the adapter retried; then the person cancels
        signal.cancel("stopped by the user")
        return [Retrying(retry=1, delay=0.5, reason="HTTP 529: overloaded"), *text("late")]

    setup = agent_setup(FunctionModel(retry_then_stop, model_id="openai/gpt-test"))
    result = await run_agent(setup, "hi", env=TurnEnvironment(signal=signal))
    assert result.stop_reason == "aborted"
    found = by_name(spans.get_finished_spans())
    chat, turn = _one(found, "chat gpt-test"), _one(found, "invoke_agent")
    assert (chat.attributes or {})["gen_ai.provider.name"] == "openai"
    [retrying] = chat.events
    assert dict(retrying.attributes or {}) == {
        "eve.retry": 1,
        "eve.delay_seconds": 0.5,
        "eve.reason": "HTTP 529: overloaded",
    }
    for span in (chat, turn):
        assert span.status.status_code == StatusCode.UNSET, span.name
    assert (turn.attributes or {})["eve.turn.stop_reason"] == "aborted"


async def test_a_compactions_summary_is_a_chat_span_of_the_turn(
    spans: InMemorySpanExporter, no_content: None
) -> None:
    """The summary a compaction asks for between steps is a model call like the steps'."""
    look = live("look", define_tool(description="Look.", input_schema=None, execute=_seen))

    steps = 0  # counted here: a compaction folds the earlier steps out of the request

    def respond(request: ModelRequest) -> list[ModelEvent]:
        nonlocal steps
        if request.purpose == "compaction":
            return text(
                "the user looked around", usage=TokenUsage(input_tokens=50, output_tokens=7)
            )
        steps += 1
        looks = calls(("look", {}), ("look", {}), prefix=f"s{steps}_")
        return looks if steps < 12 else text("done")

    setup = agent_setup(
        FunctionModel(respond, model_id="anthropic/claude-test"),
        tools=[look],
        compaction=Compaction(threshold_percent=50),
        context_window_tokens=2_000,
        max_turns=20,
    )
    result = await run_agent(setup, "look", env=TurnEnvironment(session_id="ses_trace"))
    assert result.stop_reason == "complete"
    found = by_name(spans.get_finished_spans())
    turn = _one(found, "invoke_agent")
    purposes = [dict(s.attributes or {}) for s in found["chat claude-test"]]
    summaries = [a for a in purposes if a["eve.request.purpose"] == "compaction"]
    assert summaries and all("eve.step.index" not in a for a in summaries)
    assert all(a["gen_ai.usage.output_tokens"] == 7 for a in summaries)
    steps = [a["eve.step.index"] for a in purposes if a["eve.request.purpose"] == "turn"]
    assert steps == list(range(len(steps)))
    for span in found["chat claude-test"]:
        assert span.parent is not None and span.parent.span_id == turn.context.span_id


def _seen(data: object, ctx: object) -> str:
    return "seen " * 80
