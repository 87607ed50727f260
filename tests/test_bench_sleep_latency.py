"""The scale benchmark's model latency: its id, its draws (mean, spread, bounds, same key
same sleep), the server side's agreement with what the report computes, and how the report
tells waves from an even load."""

from __future__ import annotations

import math
import statistics
import time

import pytest

from bench import _scale_waves
from bench._sleep_latency import MESSAGE_PREFIX, SleepSpec, parse
from bench._sleep_model import FINAL_TEXT, TOOL, SleepModel, build, turn_and_step
from eve.errors import UnknownModel
from eve.messages import AssistantMessage, TextPart, ToolCallPart, UserMessage
from eve.models.base import ModelRequest
from eve.models.events import Done, TextDelta, ToolCallEnd

KEYS = [f"{process}.{client}.{turn}" for process in range(3) for client in range(400) for turn in range(6)]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "spec"),
    [
        ("2.0x3", SleepSpec(seconds=2.0, steps=3)),
        ("2x3~0.25", SleepSpec(seconds=2.0, steps=3, spread=0.25)),
        ("0.1x3~1", SleepSpec(seconds=0.1, steps=3, spread=1.0)),
        ("1.5", SleepSpec(seconds=1.5, steps=1)),
        ("2x3~0", SleepSpec(seconds=2.0, steps=3)),
    ],
)
def test_an_id_names_the_mean_the_steps_and_the_spread(name: str, spec: SleepSpec) -> None:
    assert parse(name) == spec
    # what the benchmark names is what the model builds
    assert parse(spec.model_id.removeprefix("benchsleep/")) == spec


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("twox3", "not numbers"),
        ("2x3.5", "not numbers"),
        ("2x3~", "not numbers"),
        ("2x3~wide", "not numbers"),
        ("0x3", "seconds must be a number above 0, not '0'"),
        ("-2x3", "seconds must be a number above 0"),
        ("infx3", "seconds must be a number above 0"),
        ("2x0", "at least one step, not '0'"),
        ("2x3~1.5", "spread must be from 0 to 1.0, not '1.5'"),
        ("2x3~-0.1", "spread must be from 0 to 1.0"),
        ("2x3~nan", "spread must be from 0 to 1.0"),
    ],
)
def test_a_bad_id_is_refused_with_the_form_it_should_have(name: str, why: str) -> None:
    with pytest.raises(UnknownModel) as refused:
        parse(name)
    assert refused.value.model_id == f"benchsleep/{name}"
    message = str(refused.value)
    assert message.startswith(f"model 'benchsleep/{name}': ") and why in message
    assert "Expected benchsleep/<seconds>x<steps>[~<spread>]" in message


def test_without_a_spread_every_step_sleeps_the_mean() -> None:
    spec = parse("2.0x3")
    assert {spec.step_seconds(key, step) for key in KEYS[:50] for step in range(3)} == {2.0}
    assert spec.turn_model_seconds("0.0.0") == spec.turn_seconds == 6.0


@pytest.mark.parametrize("spread", [0.25, 0.5, 1.0])
def test_the_draws_keep_the_mean_and_have_the_spread_asked(spread: float) -> None:
    spec = SleepSpec(seconds=2.0, steps=3, spread=spread)
    draws = [spec.step_seconds(key, step) for key in KEYS for step in range(3)]
    # 21,600 draws: the sample mean's standard error is spread * 2 / 147, under 0.7 %
    assert statistics.fmean(draws) == pytest.approx(2.0, rel=0.02)
    assert statistics.pstdev(draws) / statistics.fmean(draws) == pytest.approx(spread, rel=0.1)
    # a lognormal's median is below its mean, by exp(-sigma**2 / 2): skewed to the right
    sigma = math.sqrt(math.log1p(spread**2))
    assert statistics.median(draws) == pytest.approx(2.0 * math.exp(-(sigma**2) / 2), rel=0.03)
    # every draw positive, and none beyond the distribution's 1-in-3.5-million quantiles
    low, high = (2.0 * math.exp(z * sigma - sigma**2 / 2) for z in (-5.0, 5.0))
    assert low < min(draws) and max(draws) < high


def test_a_draw_is_a_function_of_the_turn_and_the_step() -> None:
    spec = parse("2x3~0.25")
    again = parse("2x3~0.25")
    assert [spec.step_seconds("1.2.3", s) for s in range(3)] == [
        again.step_seconds("1.2.3", s) for s in range(3)
    ]
    draws = {spec.step_seconds(key, step) for key in KEYS[:100] for step in range(3)}
    assert len(draws) == 300  # other turns and steps draw apart


def _request(key: str, *, steps_taken: int) -> ModelRequest:
    messages: list[UserMessage | AssistantMessage] = [
        UserMessage(parts=[TextPart(text="go 9.9.9")]),
        AssistantMessage(parts=[TextPart(text=FINAL_TEXT)]),
        UserMessage(parts=[TextPart(text=MESSAGE_PREFIX + key)]),
    ]
    for step in range(steps_taken):
        call = ToolCallPart(id=f"call_{step}", name=TOOL, input={})
        messages.append(AssistantMessage(parts=[call]))
    return ModelRequest(system="", messages=list(messages))


async def test_the_server_side_model_sleeps_what_the_report_computes() -> None:
    model = build("0.02x3~0.5", env={}, app_root=None)  # type: ignore[arg-type]
    assert isinstance(model, SleepModel) and model.model_id == "benchsleep/0.02x3~0.5"
    for step in range(3):
        request = _request("4.5.6", steps_taken=step)
        assert turn_and_step(request) == ("4.5.6", step)
        began = time.perf_counter()
        events = [event async for event in model.stream(request)]
        slept = time.perf_counter() - began
        # uvloop and asyncio may wake a timer up to a millisecond early
        assert slept >= model.spec.step_seconds("4.5.6", step) - 0.001
        last = step == 2
        assert any(isinstance(e, ToolCallEnd) and e.name == TOOL for e in events) is not last
        assert ("".join(e.text for e in events if isinstance(e, TextDelta)) == FINAL_TEXT) is last
        assert isinstance(events[-1], Done)


def test_the_report_tells_waves_from_an_even_load() -> None:
    window = (1000.0, 1030.0)
    # 1,000 sessions in phase: all within 100 ms, every 6 s
    waves = [{"sent": 1000.0 + 6 * k + i / 10_000} for k in range(5) for i in range(1000)]
    even = [{"sent": 1000.0 + 30 * i / 5000} for i in range(5000)]
    in_waves = _scale_waves.arrivals(waves, window)
    evenly = _scale_waves.arrivals(even, window)
    assert in_waves["posts_per_s_max"] == 1000 and in_waves["posts_busiest_100ms"] == 1000
    assert in_waves["posts_per_s_cv"] > 2 and in_waves["posts_per_100ms_cv"] > 5
    assert in_waves["posts_none_100ms"] == 295 and evenly["posts_none_100ms"] == 0
    assert evenly["posts_per_s_cv"] < 0.01 and evenly["posts_busiest_100ms"] in (16, 17, 18)
    assert evenly["posts_per_100ms_cv"] < 0.1 and sum(evenly["posts_by_second"]) == 5000


def test_the_drawn_mean_and_overheads_come_from_each_turns_key() -> None:
    spec = parse("2x3~0.5")
    turns = [{"key": key, "status": 202, "turn_s": spec.turn_model_seconds(key) + 0.25} for key in KEYS[:9]]  # fmt: skip
    assert _scale_waves.overheads(turns, spec) == pytest.approx([0.25] * 9)
    drawn = sum(spec.turn_model_seconds(k) for k in KEYS[:9]) / 27
    refused = [{"key": "0.0.99", "status": 503}]
    assert _scale_waves.drawn_step_mean(turns + refused, spec) == pytest.approx(drawn)
    assert _scale_waves.drawn_step_mean(refused, spec) is None
