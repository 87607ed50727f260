"""The ``invoke_agent`` spans of turns, and the ``execute_tool`` spans of calls that run as
tasks, built from the events a turn emits.

Every event passes ``EventEmitter.emit``, which hands it to ``observe``. A turn's span starts
at ``turn.started`` and is the current span while the turn runs (so the spans of its model
calls and function tools, made at the loop's seams, are its children) until
``turn.completed``, ``turn.failed`` or ``turn.cancelled`` ends it. A call that runs as a task
(a subagent, a workflow tool) has a span from its ``task.started`` to its ``action.result``,
so that a subagent's turn, whose events carry the call in ``parent``, is that span's child.

Replays: a recovered durable turn runs its body again, which emits the turn's and the
steps' own events again (``task.started`` among them; the event log skips them), but a step
that completed before the crash comes back from its record without emitting what happened
inside it, ``action.result`` included. So a task call a replay brings back opens a span
that never ends and so is never exported. The turn span of the run that died was never
ended either, so the recovered run's is the one.

Times are the events' ``meta.at``, so a span is as long as the events say.
"""

from __future__ import annotations

import json
from contextvars import Token
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import context, trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind

from eve._redact import redact
from eve.events import (
    ActionResult,
    ActionsRequested,
    MessageCompleted,
    MessageReceived,
    SessionEvent,
    TaskStarted,
    TaskStartedData,
    TurnCancelled,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
)
from eve.tracing._otel import fail_with_text, nanoseconds, tracer, tracing
from eve.tracing._tool_span import record_arguments, record_result, tool_span
from eve.tracing.conventions import (
    AGENT_NAME,
    CACHE_READ_TOKENS,
    CACHE_WRITE_TOKENS,
    CONVERSATION,
    INPUT_MESSAGES,
    INPUT_TOKENS,
    OPERATION,
    OUTPUT_MESSAGES,
    OUTPUT_TOKENS,
    PARENT_SESSION,
    STOP_REASON,
    TURN_ID,
    capture_content,
)

#: a session's turn, or a session's call: spans are found by the ids events carry
Key = tuple[str, str]


@dataclass(kw_only=True)
class _OpenTurn:
    span: Span
    token: Token[Context]
    session_id: str
    content: bool
    #: the calls' inputs, for a task call's ``gen_ai.tool.call.arguments``
    arguments: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the last text the model wrote this turn, for ``gen_ai.output.messages``
    answer: str | None = None
    #: the task calls' spans, open until their result
    tasks: dict[str, Span] = field(default_factory=dict)


@dataclass(kw_only=True)
class TurnSpans:
    """The open spans of this process's turns; one instance, fed by every emitter."""

    turns: dict[Key, _OpenTurn] = field(default_factory=dict)
    #: the task calls' spans by (session, call id), where a subagent's turn finds its parent
    tasks: dict[Key, Span] = field(default_factory=dict)

    def observe(self, event: SessionEvent) -> None:
        if isinstance(event, TurnStarted):
            if tracing():
                self._start(event)
            return
        if not self.turns:
            return  # the fast path of a process that does not trace
        data = event.data
        turn = self.turns.get((data.session_id, data.turn_id or ""))
        if turn is None:
            return  # no turn span: nothing records, or the turn began before tracing did
        at = event.meta.at
        match event:
            case MessageReceived(data=received) if turn.content:
                message = {"role": "user", "parts": [{"type": "text", "content": received.message}]}
                turn.span.set_attribute(INPUT_MESSAGES, _json([message]))
            case ActionsRequested(data=requested) if turn.content:
                turn.arguments.update({a.call_id: a.input for a in requested.actions})
            case TaskStarted(data=started):
                self._task(turn, started, at)
            case ActionResult(data=result) if result.call_id in turn.tasks:
                span = turn.tasks.pop(result.call_id)
                self.tasks.pop((result.session_id, result.call_id), None)
                if result.status == "failed":
                    fail_with_text(span, result.output, stacktrace=result.traceback)
                record_result(span, result.status, result.output, content=turn.content)
                span.end(end_time=nanoseconds(at))
            case MessageCompleted(data=completed):
                turn.answer = completed.message
            case TurnCompleted() | TurnFailed() | TurnCancelled():
                self._end(turn, event, at)
            case _:
                pass

    def _start(self, event: TurnStarted) -> None:
        data = event.data
        parent = (
            self.tasks.get((data.parent.session_id, data.parent.call_id)) if data.parent else None
        )
        name = f"invoke_agent {data.node_id}" if data.node_id else "invoke_agent"
        span = tracer().start_span(
            name,
            context=trace.set_span_in_context(parent) if parent is not None else None,
            kind=SpanKind.INTERNAL,
            start_time=nanoseconds(event.meta.at),
        )
        if not span.is_recording():
            return
        span.set_attributes({OPERATION: "invoke_agent", CONVERSATION: data.session_id})
        span.set_attribute(TURN_ID, data.turn_id or "")
        if data.node_id:
            span.set_attribute(AGENT_NAME, data.node_id)
        if data.parent:
            span.set_attribute(PARENT_SESSION, data.parent.session_id)
        # current while the turn runs: the chat spans of its model calls are its children
        token = context.attach(trace.set_span_in_context(span))
        self.turns[(data.session_id, data.turn_id or "")] = _OpenTurn(
            span=span,
            token=token,
            session_id=data.session_id,
            content=capture_content(),
        )

    def _task(self, turn: _OpenTurn, started: TaskStartedData, at: str) -> None:
        span = tool_span(
            started.name,
            started.call_id,
            session_id=turn.session_id,
            step=started.step_index,
            parent=turn.span,
            start_time=nanoseconds(at),
        )
        if turn.content and started.call_id in turn.arguments:
            record_arguments(span, turn.arguments[started.call_id])
        turn.tasks[started.call_id] = span
        self.tasks[(started.session_id, started.call_id)] = span

    def _end(
        self, turn: _OpenTurn, event: TurnCompleted | TurnFailed | TurnCancelled, at: str
    ) -> None:
        data = event.data
        del self.turns[(data.session_id, data.turn_id or "")]
        for call_id in turn.tasks:
            # a task whose result a replay brought back: its span stays unended, unexported
            self.tasks.pop((data.session_id, call_id), None)
        span = turn.span
        match event:
            case TurnCompleted(data=completed):
                usage = completed.usage
                span.set_attributes(
                    {
                        STOP_REASON: completed.stop_reason,
                        INPUT_TOKENS: usage.total_input_tokens,
                        OUTPUT_TOKENS: usage.output_tokens,
                        CACHE_READ_TOKENS: usage.cache_read_tokens,
                        CACHE_WRITE_TOKENS: usage.cache_write_tokens,
                    }
                )
                if turn.content and turn.answer is not None:
                    answer = {
                        "role": "assistant",
                        "parts": [{"type": "text", "content": turn.answer}],
                    }
                    span.set_attribute(OUTPUT_MESSAGES, _json([answer]))
            case TurnFailed(data=failed):
                fail_with_text(span, failed.error)
            case TurnCancelled():
                span.set_attribute(STOP_REASON, "aborted")
        span.end(end_time=nanoseconds(at))
        context.detach(turn.token)


def _json(value: Any) -> str:
    return redact(json.dumps(value, ensure_ascii=False, default=str))


#: the one instance every emitter of this process feeds
SPANS = TurnSpans()


def traced_turns() -> bool:
    """Whether a turn of this process is traced: the seams of a step (model calls, tools)
    make spans only inside one, so a process that does not trace skips them at once."""
    return bool(SPANS.turns)


def observe(event: SessionEvent) -> None:
    """Hand ``event`` to this process's turn spans (``EventEmitter.emit`` calls it)."""
    SPANS.observe(event)
