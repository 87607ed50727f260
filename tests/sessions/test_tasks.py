"""Tasks over HTTP: a workflow tool parked on a person across a restart, one waiting for an
event, and a subagent whose session asks a person and whose events join the caller's log."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from eve.client import EveClient
from tests.conftest import AppFactory
from tests.sessions.apps import SCRIPTED_AGENT, TOOLS, call, say
from tests.sessions.harness import Event, Server, assert_dense, count, types
from tests.sessions.inprocess import InProcessServer

CONFIRM = """
    from pathlib import Path
    from eve.tools import WorkflowContext, define_workflow_tool

    async def confirm(data, ctx: WorkflowContext):
        await ctx.progress({"asking": data["slot"]})
        answer = await ctx.ask(f"Can it arrive {data['slot']}?", options=["yes", "no"])
        # a side effect after the wait: recorded, so a recovered body does not repeat it
        async def note():
            with Path("confirmed.log").open("a") as log:
                log.write(f"{data['slot']} {answer}\\n")
            return answer
        return {"slot": data["slot"], "answer": await ctx.step("note", note)}

    default = define_workflow_tool(
        description="Confirm a delivery slot with the customer.",
        input_schema={"type": "object", "properties": {"slot": {"type": "string"}},
                      "required": ["slot"]},
        run=confirm,
    )
"""

DELIVERY = """
    from eve.tools import WorkflowContext, define_workflow_tool

    async def track(data, ctx: WorkflowContext):
        event = await ctx.wait_for_event("delivered")
        return {"delivered": event}

    default = define_workflow_tool(description="Wait until the parcel is delivered.", run=track)
"""

RESEARCHER = {
    "agent/subagents/researcher/agent.py": """
        from eve import define_agent
        default = define_agent(description="Looks things up.")
    """,
    "agent/subagents/researcher/instructions.md": "Research.\n",
}


def app(make_app: AppFactory, files: dict[str, str], responses: Any) -> Path:
    root = make_app(
        {
            "agent/agent.py": SCRIPTED_AGENT.replace("{limits}", "{'max_turns': 5}"),
            "agent/instructions.md": "Follow the script.\n",
            **files,
        },
        minimal=False,
    )
    (root / "script.json").write_text(json.dumps(responses), encoding="utf-8")
    return root


def shipping_researcher(make_app: AppFactory, item: str, answer: str) -> Path:
    """The root delegates to a researcher whose own ``ship`` tool needs approval."""
    return app(
        make_app,
        {**RESEARCHER, "agent/subagents/researcher/tools/ship.py": TOOLS["ship"]},
        {
            "__root__": [call("researcher", message=f"ship a {item}"), say(answer)],
            "researcher": [call("ship", item=item), say(f"shipped the {item}")],
        },
    )


def of(events: list[Event], type_: str) -> list[dict[str, Any]]:
    return [e["data"] for e in events if e["type"] == type_]


def test_a_workflow_tool_asks_a_person_parks_across_a_restart_and_settles(
    make_app: AppFactory,
) -> None:
    root = app(
        make_app,
        {"agent/tools/confirm.py": CONFIRM},
        [call("confirm", slot="Friday"), say("Friday it is")],
    )
    server = Server(root).start()
    try:
        session = server.create("deliver")
        parked = server.wait_for(session, count("turn.waiting"))
        [[request]] = [d["requests"] for d in of(parked, "input.requested")]
        assert request["kind"] == "question" and request["question"] == "Can it arrive Friday?"
        assert [o["id"] for o in request["options"]] == ["yes", "no"]
        [started] = of(parked, "task.started")
        assert (started["name"], started["kind"]) == ("confirm", "workflow-tool")
        assert request["task_id"] == started["task_id"]
        server.restart()
        body = {"inputResponses": [{"requestId": request["request_id"], "optionId": "maybe"}]}
        refused = server.post(f"/session/{session}", body)
        assert refused.status_code == 400 and refused.json()["code"] == "input_option_unknown"
        assert "yes, no" in refused.json()["error"]
        server.answer(session, request["request_id"], "yes")
        events = server.wait_for(session, count("session.waiting"))
    finally:
        server.stop()
    assert (root / "confirmed.log").read_text() == "Friday yes\n"
    assert_dense(events)
    assert of(events, "action.partial")[0]["partial"] == {"asking": "Friday"}
    [settled] = of(events, "task.settled")
    assert settled["status"] == "completed"
    [result] = of(events, "action.result")
    assert json.loads(result["output"]) == {"slot": "Friday", "answer": "yes"}
    assert types(events).index("task.settled") < types(events).index("action.result")
    assert of(events, "message.completed")[-1]["message"] == "Friday it is"


def test_a_workflow_tool_waits_for_an_event_sent_to_its_task(make_app: AppFactory) -> None:
    root = app(make_app, {"agent/tools/track.py": DELIVERY}, [call("track"), say("it arrived")])
    server = InProcessServer(root).start()
    try:
        session = server.create("track my parcel")
        started = server.wait_for(session, count("task.started"))
        [task] = of(started, "task.started")
        wrong = server.post(f"/session/{session}/tasks/{session}:turn-0/events", {"name": "x"})
        assert wrong.status_code == 409 and wrong.json()["code"] == "task_not_waiting"
        sent = server.post(
            f"/session/{session}/tasks/{task['task_id']}/events",
            {"name": "delivered", "data": {"at": "door"}},
        )
        assert sent.status_code == 202, sent.text
        events = server.wait_for(session, count("session.waiting"))
        late = server.post(
            f"/session/{session}/tasks/{task['task_id']}/events", {"name": "delivered"}
        )
    finally:
        server.stop()
    assert late.status_code == 409  # the task has settled
    [result] = of(events, "action.result")
    assert json.loads(result["output"]) == {"delivered": {"at": "door"}}


def test_a_subagent_session_asks_through_its_caller_and_its_events_are_linked(
    make_app: AppFactory,
) -> None:
    root = shipping_researcher(make_app, "hammer", "the researcher did it")
    server = Server(root).start()
    try:
        session = server.create("get it done")
        parked = server.wait_for(session, count("turn.waiting"))
        [[request]] = [d["requests"] for d in of(parked, "input.requested")]
        assert request["tool_name"] == "ship" and request["kind"] == "tool-approval"
        server.restart()
        assert not (root / "shipped.log").exists()
        server.answer(session, request["request_id"], "approve")
        events = server.wait_for(session, count("session.waiting"))
    finally:
        server.stop()
    assert (root / "shipped.log").read_text() == "hammer\n"
    assert_dense(events)
    [started] = of(events, "task.started")
    child = [e for e in events if "parent" in e["data"]]
    assert child and all(e["data"]["node_id"] == "researcher" for e in child)
    assert {e["data"]["parent"]["call_id"] for e in child} == {started["call_id"]}
    assert {e["data"]["parent"]["session_id"] for e in child} == {session}
    child_sessions = {e["data"]["session_id"] for e in child}
    assert len(child_sessions) == 1 and session not in child_sessions
    assert "turn.completed" in [e["type"] for e in child]
    [result] = [r for r in of(events, "action.result") if "parent" not in r]
    assert (result["name"], result["output"]) == ("researcher", "shipped the hammer")
    assert of(events, "message.completed")[-1]["message"] == "the researcher did it"


def test_cancelling_a_turn_stops_its_parked_workflow_tool(make_app: AppFactory) -> None:
    root = app(
        make_app,
        {"agent/tools/confirm.py": CONFIRM},
        [call("confirm", slot="Monday"), say("never said")],
    )
    server = InProcessServer(root).start()
    try:
        session = server.create("deliver")
        server.wait_for(session, count("turn.waiting"))
        assert server.post(f"/session/{session}/cancel").status_code == 202
        events = server.wait_for(session, count("session.waiting"))
    finally:
        server.stop()
    assert not (root / "confirmed.log").exists()
    [settled] = of(events, "task.settled")
    assert settled["status"] == "failed"
    # the call ran and was cancelled while it waited: its result says so, it is not "not run"
    [result] = of(events, "action.result")
    assert "TaskCancelled" in result["output"]
    [resolved] = of(events, "input.resolved")
    assert resolved["option_id"] == "cancelled"
    assert "turn.cancelled" in types(events)


RUNTIME_HELPER = {
    "agent/subagents/helper/agent.py": """
        from eve import define_agent
        from agent.lib.keys import HELPER
        default = define_agent(description="Helps.", model="offline/script:compiled.json",
                               runtime_config=HELPER)
    """,
    "agent/subagents/helper/instructions.md": "Help.\n",
    "agent/lib/__init__.py": "",
    "agent/lib/keys.py": """
        from eve.authoring.agent import runtime_config_key
        HELPER = runtime_config_key("helper.config")
    """,
    "agent/tools/configure.py": """
        from agent.lib.keys import HELPER
        from eve.tools import tool

        @tool
        def configure(model: str) -> str:
            '''Choose the helper's model.'''
            HELPER.set({"model": model})
            return "configured"
    """,
}


def test_a_subagent_configured_at_run_time_runs_durably_as_configured(
    make_app: AppFactory,
) -> None:
    root = app(
        make_app,
        RUNTIME_HELPER,
        [
            call("helper", message="too early"),
            call("configure", model="offline/script:runtime.json"),
            call("helper", message="now"),
            say("done"),
        ],
    )
    (root / "compiled.json").write_text("[]")
    (root / "runtime.json").write_text(json.dumps([say("configured at run time")]))
    server = InProcessServer(root).start()
    try:
        session = server.create("go")
        events = server.wait_for(session, count("session.waiting"))
    finally:
        server.stop()
    helper = [r for r in of(events, "action.result") if r["name"] == "helper"]
    assert helper[0]["status"] == "failed" and "SubagentConfigMissing" in helper[0]["output"]
    assert (helper[1]["status"], helper[1]["output"]) == ("completed", "configured at run time")


def test_an_invalid_runtime_config_fails_the_call_not_the_turn(make_app: AppFactory) -> None:
    root = app(
        make_app,
        RUNTIME_HELPER,
        [call("configure", model="no-prefix"), call("helper", message="go"), say("done")],
    )
    (root / "compiled.json").write_text("[]")
    server = InProcessServer(root).start()
    try:
        session = server.create("go")
        events = server.wait_for(session, count("session.waiting"))
    finally:
        server.stop()
    assert "turn.completed" in types(events)
    [helper] = [r for r in of(events, "action.result") if r["name"] == "helper"]
    assert helper["status"] == "failed" and "SubagentConfigInvalid" in helper["output"]
    assert "needs a provider prefix" in helper["output"]


NAPPER = """
    from eve.tools import WorkflowContext, define_workflow_tool

    async def nap(data, ctx: WorkflowContext):
        await ctx.sleep(1)
        return "rested"

    default = define_workflow_tool(description="Nap for a second.", run=nap)
"""


def test_a_sleep_ends_on_time_while_other_messages_keep_arriving(make_app: AppFactory) -> None:
    root = app(make_app, {"agent/tools/nap.py": NAPPER}, [call("nap"), say("awake")])
    server = InProcessServer(root).start()
    try:
        session = server.create("nap")
        [task] = of(server.wait_for(session, count("task.started")), "task.started")
        events: list[Event] = []
        # an event every 0.2 s that nothing waits for: each used to restart the whole sleep,
        # so this loop would never see the turn end
        for _ in range(150):
            path = f"/session/{session}/tasks/{task['task_id']}/events"
            server.post(path, {"name": "noise"})
            events = server.events(session)
            if "session.waiting" in types(events):
                break
            time.sleep(0.2)
    finally:
        server.stop()
    [result] = of(events, "action.result")
    assert result["output"] == "rested"


def test_the_client_stops_where_a_subagent_parks_on_a_person(make_app: AppFactory) -> None:
    root = shipping_researcher(make_app, "saw", "done")
    server = InProcessServer(root).start()
    try:
        with EveClient(server.url, transport=server.transport()) as client:
            accepted = client.create("go")
            assert accepted.turn_id is not None
            events = list(client.turn_events(accepted.session_id, accepted.turn_id))
    finally:
        server.stop()
    assert events[-1].type == "turn.waiting" and events[-1].data.parent is not None
    assert "input.requested" in [e.type for e in events]
