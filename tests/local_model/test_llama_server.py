"""eve end to end against a real llama.cpp server running SmolLM2-135M-Instruct
(`make test-local-model` starts it): text, streaming, a tool call, typed output, truncated
answers, compaction with a declared window, an input-token limit and the window errors.

A 135M model is erratic: every assertion is about what eve did (events, exit codes, usage,
the requests' bounds), never about what the model said. Skipped without EVE_LOCAL_MODEL_URL.
"""

from __future__ import annotations

import json

from eve.cli.run_command import TRUNCATED_NOTICE
from tests.cli.test_run_cli import eve_run
from tests.conftest import AppFactory
from tests.local_model.local_run import (
    LOCAL_MODEL,
    LOCAL_MODEL_CTX,
    STEADY,
    LocalRun,
    agent_source,
    local_env,
    needs_server,
    run_local,
)

pytestmark = needs_server

TRIAGE = """\
import pydantic
from typing import Literal

class Triage(pydantic.BaseModel):
    kind: Literal["price", "order", "return", "other"]
    urgent: bool
"""

PRICE_TOOL = """
from eve.tools import tool

@tool
def lookup_price(item: str) -> str:
    '''Look up the price of an item in the shop's catalog.'''
    return f"{item}: 12 dollars"
"""


def test_a_text_answer_streams_in_pieces_within_its_output_bound(make_app: AppFactory) -> None:
    settings = {**STEADY, "max_output_tokens": 24}
    root = make_app({"agent/agent.py": agent_source(model_settings=settings)})
    run = run_local(root, "Count from one to twenty, in words.")
    assert run.returncode == 0, run.failure()
    pieces = [d["message_delta"] for d in run.of("message.appended")]
    message = run.one("message.completed")["message"]
    assert len(pieces) > 1 and "".join(pieces) == message and message.strip()
    turn = run.one("turn.completed")
    assert turn["stop_reason"] == "complete"
    usage = turn["usage"]
    assert usage["input_tokens"] + usage.get("cache_read_tokens", 0) > 0
    assert 0 < usage["output_tokens"] <= 24  # the request asked for at most 24
    assert turn["cost"]["unpriced"] == [LOCAL_MODEL]  # no price known, and it says so
    # without --json: the answer alone on stdout
    plain = eve_run(root, "Say hello.", "--model", LOCAL_MODEL, env=local_env())
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.strip() and not plain.stdout.startswith("{")


#: SmolLM2-135M does not call tools of its own accord, so the tool test nudges it: token 44
#: of its vocabulary is "<", the first token of "<tool_call>", and once the model writes that
#: llama.cpp's grammar holds it to a call of an offered tool with valid JSON input; the stop
#: sequence ends the answer after one call (the grammar would allow more)
CALL_A_TOOL = {**STEADY, "max_output_tokens": 64, "stop_sequences": ["</tool_call>"]}
NUDGE = {"logit_bias": {"44": 6}}


def test_a_tool_call_runs_and_its_result_goes_back(make_app: AppFactory) -> None:
    settings = {**CALL_A_TOOL, "extra": NUDGE}
    root = make_app(
        {
            "agent/agent.py": agent_source(model_settings=settings),
            "agent/instructions.md": "You are a shop assistant. Look up prices with lookup_price.\n",
            "agent/tools/lookup_price.py": PRICE_TOOL,
        }
    )
    run = run_local(root, "How much are nails?", "--max-turns", "2")
    # the nudge stays on: the second answer may be another call (max turns, exit 2)
    assert run.returncode in (0, 2), run.failure()
    requested = run.of("actions.requested")[0]["actions"]
    assert [call["name"] for call in requested] == ["lookup_price"], run.failure()
    [call] = requested
    assert isinstance(call["input"]["item"], str)  # the schema's input, parsed by eve
    result = run.of("action.result")[0]
    assert result["call_id"] == call["call_id"] and result["status"] == "completed"
    assert result["output"] == f"{call['input']['item']}: 12 dollars"
    # the result went back: the server took the call and its result in a second request
    steps = run.of("step.completed")
    assert [s["finish_reason"] for s in steps][:1] == ["tool_use"] and len(steps) == 2
    second = steps[1]["step"]["usage"]
    first = steps[0]["step"]["usage"]
    whole = second["input_tokens"] + second.get("cache_read_tokens", 0)
    assert whole > first["input_tokens"] + first.get("cache_read_tokens", 0)


def triage(make_app: AppFactory, *, max_output_tokens: int) -> LocalRun:
    """A complaint answered by an agent whose answer is a ``Triage``."""
    agent = agent_source(
        imports="from agent.lib.triage import Triage",
        output_schema="Triage",
        model_settings={**STEADY, "max_output_tokens": max_output_tokens},
    )
    files = {"agent/agent.py": agent, "agent/lib/__init__.py": "", "agent/lib/triage.py": TRIAGE}
    return run_local(make_app(files), "My new hammer broke after a day; I want my money back.")


def test_a_typed_answer_is_constrained_to_its_schema(make_app: AppFactory) -> None:
    run = triage(make_app, max_output_tokens=64)
    assert run.returncode == 0, run.failure()
    output = run.one("turn.completed")["output"]
    assert output["kind"] in ("price", "order", "return", "other")
    assert isinstance(output["urgent"], bool)


def test_a_cut_text_answer_is_reported(make_app: AppFactory) -> None:
    root = make_app(
        {"agent/agent.py": agent_source(model_settings={**STEADY, "max_output_tokens": 5})}
    )
    run = run_local(root, "Write a long poem about the sea.")
    assert run.returncode == 0, run.failure()  # a text answer, cut or not, is an answer
    turn = run.one("turn.completed")
    assert turn["finish_reason"] == "max_tokens"
    assert turn["usage"]["output_tokens"] == 5
    assert run.one("message.completed")["finish_reason"] == "max_tokens"
    assert TRUNCATED_NOTICE in run.stderr


def test_a_cut_typed_answer_fails_the_run(make_app: AppFactory) -> None:
    run = triage(make_app, max_output_tokens=3)
    assert run.returncode == 1, run.failure()
    failed = run.one("turn.failed")["error"]
    # three tokens of the schema's grammar hold no whole JSON value, so llama.cpp streams
    # none of it: still a cut answer, and it says what to raise
    assert failed.startswith("OutputTruncated:") and LOCAL_MODEL in failed
    assert "max_output_tokens" in failed


def test_compaction_folds_history_against_the_declared_window(make_app: AppFactory) -> None:
    # threshold 10% of 2048 tokens: the second turn's history is past it
    root = make_app(
        {
            "agent/agent.py": agent_source(
                model_context_window_tokens=LOCAL_MODEL_CTX,
                compaction={"threshold_percent": 10},
                model_settings={**STEADY, "max_output_tokens": 48},
            )
        }
    )
    facts = " ".join(f"Order {n} holds {n + 2} hammers and ships on day {n}." for n in range(24))
    first = run_local(root, f"Remember these orders. {facts}", "--session", "s.jsonl")
    assert first.returncode == 0, first.failure()
    assert first.of("session.compacted") == []  # one message: nothing older to fold
    second = run_local(root, "How many hammers does order 3 hold?", "--session", "s.jsonl")
    assert second.returncode == 0, second.failure()
    assert second.of("session.compaction_failed") == [], second.failure()
    compacted = second.one("session.compacted")
    assert compacted["model"] == LOCAL_MODEL and compacted["reason"] == "threshold"
    assert compacted["messages_folded"] >= 1
    assert compacted["tokens_after"] < compacted["tokens_before"]
    assert compacted["usage"]["output_tokens"] > 0  # the summary was written by the model
    # the transcript keeps everything; the model was sent the summary instead
    lines = [json.loads(line) for line in (root / "s.jsonl").read_text().splitlines()]
    assert sum(1 for m in lines if m.get("compaction")) == 1


def test_an_input_token_limit_counts_the_input_the_server_had_cached(
    make_app: AppFactory,
) -> None:
    settings = {**STEADY, "max_output_tokens": 8}
    root = make_app({"agent/agent.py": agent_source(model_settings=settings)})
    prompt = "Say hello to the shop's customers. " * 20
    first = run_local(root, prompt)
    assert first.returncode == 0, first.failure()
    whole = first.one("turn.completed")["usage"]
    prompt_tokens = whole["input_tokens"] + whole.get("cache_read_tokens", 0)
    # the same request again: llama.cpp reads almost all of it from its prompt cache, and
    # reports those tokens as cached; a limit of half the prompt must still be reached
    limit = prompt_tokens // 2
    limits = {"max_input_tokens_per_session": limit}
    (root / "agent/agent.py").write_text(agent_source(model_settings=settings, limits=limits))
    second = run_local(root, prompt)
    assert second.returncode == 3, second.failure()
    usage = second.one("step.completed")["usage"]
    assert usage.get("cache_read_tokens", 0) > limit  # the server did serve it from cache
    assert usage["input_tokens"] < limit  # so counting only the uncached would miss it
    failed = second.one("turn.failed")["error"]
    assert failed.startswith("SessionLimitReached:") and "max_input_tokens_per_session" in failed


def test_an_unknown_window_is_warned_and_an_overflow_names_the_setting(
    make_app: AppFactory,
) -> None:
    # configured for gpt-4o (128 k): the window that counts is the running model's, unknown
    root = make_app(
        {
            "agent/agent.py": agent_source(
                compaction={"threshold_percent": 80}, retries={"attempts": 1}
            )
        }
    )
    prompt = "hammer nails saw " * LOCAL_MODEL_CTX  # past the server's window
    run = run_local(root, prompt, process=True)
    assert run.returncode == 1, run.failure()
    assert f"{LOCAL_MODEL} has no known context window" in run.stderr
    assert "model_context_window_tokens" in run.stderr  # the warning and the error both say it
    failed = run.one("turn.failed")["error"]
    assert failed.startswith("ModelContextWindowExceeded:"), failed
    assert "model_context_window_tokens" in failed
