"""Durable turns' spans: a subagent's turn under its call, and a turn recovered after
SIGKILL that traces each completed step once (its spans exported over OTLP by the server)."""

from __future__ import annotations

from collections import Counter

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.conftest import AppFactory, wait_for_file
from tests.sessions.harness import Server, count
from tests.sessions.inprocess import InProcessServer
from tests.sessions.test_crash_recovery import crash_app
from tests.sessions.test_tasks import RESEARCHER, app
from tests.tracing.conftest import by_name
from tests.tracing.otlp_receiver import Receiver, otlp_receiver

LOOKUP = """
    from eve.tools import tool

    @tool
    def lookup(item: str) -> str:
        '''Look an item up.'''
        return f"{item} costs 3"
"""


def test_a_subagents_turn_is_a_child_of_its_call_in_a_durable_session(
    make_app: AppFactory, spans: InMemorySpanExporter
) -> None:
    root = app(
        make_app,
        {**RESEARCHER, "agent/subagents/researcher/tools/lookup.py": LOOKUP},
        {
            "__root__": [
                {"tool_calls": [{"name": "researcher", "input": {"message": "price of tea"}}]},
                {"text": "tea costs 3"},
            ],
            "researcher": [
                {"tool_calls": [{"name": "lookup", "input": {"item": "tea"}}]},
                {"text": "3"},
            ],
        },
    )
    server = InProcessServer(root).start()
    try:
        session = server.create("how much is tea?")
        server.wait_for(session, count("session.waiting"))
    finally:
        server.stop()
    found = by_name(spans.get_finished_spans())
    [turn], [call], [child] = (
        found["invoke_agent"],
        found["execute_tool researcher"],
        found["invoke_agent researcher"],
    )
    [lookup] = found["execute_tool lookup"]
    chats = found["chat script:script.json"]
    assert turn.parent is None
    assert call.parent is not None and call.parent.span_id == turn.context.span_id
    assert child.parent is not None and child.parent.span_id == call.context.span_id
    assert lookup.parent is not None and lookup.parent.span_id == child.context.span_id
    # two model calls of the root's, two of the researcher's, each under its own turn
    parents = Counter(c.parent.span_id for c in chats if c.parent is not None)
    assert parents == {turn.context.span_id: 2, child.context.span_id: 2}
    assert (turn.attributes or {})["gen_ai.conversation.id"] == session
    child_attributes = dict(child.attributes or {})
    assert child_attributes["gen_ai.agent.name"] == "researcher"
    assert child_attributes["eve.parent.session_id"] == session
    assert child_attributes["gen_ai.conversation.id"] != session  # the child session's own


def _steps(receiver: Receiver, name: str) -> Counter[int]:
    return Counter(int(s.attributes["eve.step.index"]) for s in receiver.named(name))


def test_a_turn_recovered_after_sigkill_traces_completed_steps_once(
    make_app: AppFactory,
) -> None:
    root = crash_app(make_app)
    chat = "chat script:script.json"
    with otlp_receiver() as (receiver, endpoint):
        # batches leave every 50 ms, so what the first process ended is out before it dies
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": "50"}
        server = Server(root, env=env).start()
        try:
            session = server.create("go")
            wait_for_file(root / "slow.started")
            receiver.wait_for(
                lambda r: len(r.named(chat)) == 2 and r.named("execute_tool count_once")
            )
            server.kill()
            (root / "slow.release").write_text("go on")
            server.restart()
            server.wait_for(session, count("session.waiting"))
            receiver.wait_for(lambda r: bool(r.named("invoke_agent")))
        finally:
            server.stop()
    # step 0 completed before the crash: traced once, by the first process. Step 1 was cut
    # off inside its tool, so it ran again, model call included; step 2 ran after recovery
    assert _steps(receiver, chat) == {0: 1, 1: 2, 2: 1}
    [count_once] = receiver.named("execute_tool count_once")
    [slow] = receiver.named("execute_tool slow")  # the killed run never ended its span
    [turn] = receiver.named("invoke_agent")  # nor its turn's
    assert count_once.attributes["eve.tool.status"] == "completed"
    assert turn.attributes["gen_ai.conversation.id"] == session
    assert turn.attributes["eve.turn.stop_reason"] == "complete"
    recovered = [s for s in receiver.named(chat) if s.parent_id == turn.span_id]
    assert sorted(int(s.attributes["eve.step.index"]) for s in recovered) == [1, 2]
    assert slow.parent_id == turn.span_id
    assert count_once.parent_id not in ("", turn.span_id)  # the lost turn span's child
    ids = [s.span_id for s in receiver.spans]
    assert len(ids) == len(set(ids))
