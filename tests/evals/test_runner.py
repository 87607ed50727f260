"""Running cases: stubs, answers, several turns, a crashing tool, a timeout, repeats."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from eve._attachments import read_attachment
from eve.evals import (
    AnswerContains,
    Approve,
    Case,
    CaseRun,
    Check,
    Choose,
    Deny,
    MaxSteps,
    Reply,
    ToolUse,
    Trajectory,
    define_eval,
)
from eve.evals.runner import EvalOptions, LoadedEval, run_evals
from eve.execution.setup import AgentSetup
from eve.messages import ImagePart, UserMessage, user_message
from tests.evals.helpers import failure, run_one
from tests.test_attachments import PNG

ORDER = [Reply(calls=[ToolUse("place_order", {"item": "wrench"})]), Reply("Done.")]


def _outputs(run: CaseRun) -> list[str]:
    return [e.data.output for e in run.events if e.type == "action.result"]


def test_a_stub_replaces_the_tool_and_the_agent_is_untouched(setup: AgentSetup) -> None:
    seen: list[dict[str, object]] = []

    async def fake(item: str, quantity: int = 1) -> dict[str, object]:
        seen.append({"item": item, "quantity": quantity})
        return {"order_number": 99}

    case = Case(
        "stubbed",
        "Order a wrench",
        script=ORDER,
        answers=[Approve("place_order")],
        stubs={"place_order": fake},
    )
    outcome = run_one(setup, case)
    assert outcome.passed, failure(outcome)
    assert seen == [{"item": "wrench", "quantity": 1}]
    assert _outputs(outcome.run) == ['{"order_number":99}']
    # the same case without the stub runs the real tool
    real = run_one(
        setup, Case("real", "Order a wrench", script=ORDER, answers=[Approve("place_order")])
    )
    assert _outputs(real.run) == ['{"order_number":1,"item":"wrench","quantity":1}']


def test_a_crashing_tool_fails_its_call_not_the_case(setup: AgentSetup) -> None:
    def broken(item: str, quantity: int = 1) -> None:
        raise RuntimeError("the shop's API is down")

    case = Case(
        "crash",
        "Order a wrench",
        script=ORDER,
        answers=[Approve("place_order")],
        stubs={"place_order": broken},
        expect=[Check(lambda run: run.failed_calls() == ["place_order"])],
    )
    outcome = run_one(setup, case)
    assert outcome.passed, failure(outcome)
    assert _outputs(outcome.run) == ["RuntimeError: the shop's API is down"]


def test_a_case_that_takes_too_long_fails_as_timed_out(setup: AgentSetup) -> None:
    async def slow(item: str, quantity: int = 1) -> None:
        await asyncio.sleep(30)

    case = Case(
        "slow",
        "Order a wrench",
        script=ORDER,
        answers=[Approve("place_order")],
        stubs={"place_order": slow},
        timeout_seconds=0.2,
        expect=[MaxSteps(5)],
    )
    outcome = run_one(setup, case)
    assert not outcome.passed
    assert failure(outcome) == "finished: timed out after 0.2s"
    assert outcome.checks[1].passed  # the other checks still see what happened before


def test_an_approval_the_case_does_not_answer_is_denied_and_fails_it(setup: AgentSetup) -> None:
    outcome = run_one(setup, Case("no answer", "Order a wrench", script=ORDER))
    assert failure(outcome) == (
        "finished: place_order asked for approval and the case has no Approve('place_order') "
        "or Deny('place_order'); it was denied"
    )
    denied = run_one(setup, Case("deny", "Order", script=ORDER, answers=[Deny("place_order")]))
    assert denied.passed and denied.run.failed_calls() == ["place_order"]


def test_a_workflow_tool_question_is_answered_by_choose(setup: AgentSetup) -> None:
    script = [Reply(calls=[ToolUse("confirm_delivery", {"slot": "Friday"})]), Reply("Confirmed.")]
    outcome = run_one(
        setup,
        Case("slot", "Deliver Friday?", script=script, answers=[Choose("confirm_delivery", "yes")]),
    )
    assert outcome.passed, failure(outcome)
    assert json.loads(_outputs(outcome.run)[-1]) == {"slot": "Friday", "confirmed": True}
    unanswered = run_one(setup, Case("slot?", "Deliver Friday?", script=script))
    assert failure(unanswered).startswith("finished: confirm_delivery asked 'Can the order")


def test_several_messages_are_turns_of_one_session(setup: AgentSetup) -> None:
    case = Case(
        "two turns",
        "Order a wrench",
        "And what is its order number?",
        script=[*ORDER, Reply(calls=[ToolUse("session_turns", {})]), Reply("It is order 1.")],
        answers=[Approve("place_order")],
        expect=[Trajectory("place_order", "session_turns"), AnswerContains("order 1")],
    )
    outcome = run_one(setup, case)
    assert outcome.passed, failure(outcome)
    assert len(outcome.run.results) == 2
    users = [m.text for m in outcome.run.messages if isinstance(m, UserMessage)]
    assert users == ["Order a wrench", "And what is its order number?"]


def test_a_script_that_runs_out_fails_the_case_naming_the_error(setup: AgentSetup) -> None:
    outcome = run_one(
        setup, Case("short", "Order", script=ORDER[:1], answers=[Approve("place_order")])
    )
    assert failure(outcome).startswith("finished: OfflineScriptError: offline script t/short has 1")


def test_a_model_file_for_the_eval_and_a_model_for_every_case(
    setup: AgentSetup, example_root: Path
) -> None:
    (example_root / "agent/evals").mkdir(exist_ok=True)
    (example_root / "agent/evals/hello.json").write_text(json.dumps([{"text": "Hi from a file"}]))
    case = Case("file", "hello", expect=[AnswerContains("Hi from a file")])
    outcome = run_one(setup, case, model="offline/script:agent/evals/hello.json")
    assert outcome.passed and outcome.run.model == "offline/script:agent/evals/hello.json"
    inline = Case("inline", "hello", script=[Reply("inline")], expect=[AnswerContains("inline")])
    loaded = LoadedEval(name="e", path="-", definition=define_eval(cases=[inline]))
    [overridden] = asyncio.run(run_evals(setup, [loaded], EvalOptions(model="offline/test")))
    assert overridden.run.model == "offline/test" and not overridden.passed


def test_repeat_runs_a_case_several_times(setup: AgentSetup) -> None:
    runs: list[int] = []

    def every_other(run: CaseRun) -> bool:
        runs.append(1)
        return len(runs) % 2 == 1

    case = Case("flaky", "hi", script=[Reply("hello")], expect=[Check(every_other)], repeat=3)
    loaded = LoadedEval(name="e", path="-", definition=define_eval(cases=[case], min_pass_rate=0.6))
    outcomes = asyncio.run(run_evals(setup, [loaded], EvalOptions(concurrency=1)))
    assert [o.attempt for o in outcomes] == [1, 2, 3]
    assert [o.passed for o in outcomes] == [True, False, True]
    again = asyncio.run(run_evals(setup, [loaded], EvalOptions(repeat=2, concurrency=2)))
    assert len(again) == 2


def test_a_case_sends_attachments_as_content_parts(setup: AgentSetup, tmp_path: Path) -> None:
    """A message with an image and a document reaches the turn as parts (as `eve run
    --attach` sends them), and a check sees what the turn received."""
    pixel = tmp_path / "pixel.png"
    pixel.write_bytes(PNG)
    notes = tmp_path / "notes.txt"
    notes.write_text("a hammer, 12.50 EUR")
    message = user_message("What do these show?", [read_attachment(pixel), read_attachment(notes)])

    def received_both(run: CaseRun) -> str | None:
        [received] = [e for e in run.events if e.type == "message.received"]
        kinds = [(a.type, a.media_type) for a in received.data.attachments]
        if kinds != [("image", "image/png"), ("document", "text/plain")]:
            return f"received {kinds}"
        first = run.results[0].messages[0]
        assert isinstance(first, UserMessage)
        images = [p for p in first.parts if isinstance(p, ImagePart)]
        return None if images and images[0].data == pixel.read_bytes() else "no image part"

    case = Case(
        "attached",
        message,
        script=[Reply("A pixel and a price note.")],
        expect=[Check(received_both), AnswerContains("price note")],
    )
    outcome = run_one(setup, case)
    assert outcome.passed, failure(outcome)
