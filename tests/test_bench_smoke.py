"""The benchmarks' eve side still runs against today's API (a bench is not type-checked with
the package, so a changed signature would otherwise surface only in `make bench`)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bench import _durability_worker, _pyspy, auth_check, loop_overhead, tracing_overhead
from eve.compiler import compile_to_disk


async def test_the_loop_overhead_case_runs_a_whole_turn() -> None:
    case = loop_overhead._eve_case()
    assert await case.run_once() == loop_overhead.FINAL_TEXT
    assert case.tally.calls == loop_overhead.TOOL_CALLS


async def test_the_durability_in_memory_turns_run(tmp_path: Path) -> None:
    agent = _durability_worker.build_agent(tmp_path)
    timed = await _durability_worker._in_memory(agent, repeats=1, warmup=0)
    assert set(timed["turns"]) == {str(_durability_worker.SHORT), str(_durability_worker.LONG)}


def test_the_mcp_call_bench_runs_both_sides() -> None:
    from bench import mcp_call

    timings = asyncio.run(mcp_call._measure(1))
    assert len(timings["direct"]) == len(timings["eve"]) == mcp_call.PER_BLOCK


async def test_the_tracing_overhead_variants_trace_their_turns() -> None:
    variants, exporter = tracing_overhead._variants()
    on = next(v for v in variants if v.name == tracing_overhead.ON)
    try:
        tracing_overhead._use(on)
        await tracing_overhead._timed(on.case)
        assert on.provider is not None and on.provider.force_flush()
    finally:
        tracing_overhead._use(variants[0])  # no provider again
        assert on.provider is not None
        on.provider.shutdown()
    # the turn, 50 model calls, 49 tool calls
    assert exporter.spans == 1 + loop_overhead.STEPS + loop_overhead.TOOL_CALLS


def test_the_channel_latency_bench_measures_the_native_stream_and_the_custom_probe(
    tmp_path: Path,
) -> None:
    from bench import channel_latency
    from bench.channel_probes import custom

    channel_latency.write_app(tmp_path, {"custom": custom})
    compile_to_disk(tmp_path)
    doors = [
        channel_latency.Door(channel_latency.NATIVE, "/eve/v1/session/{id}/stream"),
        channel_latency.Door("custom", "/channels/custom", custom),
    ]
    with channel_latency._Serving(tmp_path) as url:
        asyncio.run(channel_latency._measure(url, doors, 1))
    for door in doors:
        [probe] = door.probes
        # the turn's events: started … a tool call, its result, the answer … resting
        assert len(probe.gaps) >= 8 and probe.first_byte > 0


def test_the_auth_check_bench_passes_every_variant() -> None:
    # each timed request asserts a 200: a variant eve refused would time nothing
    timings = asyncio.run(auth_check.measure(rounds=1, per_round=2))
    assert set(timings) == {
        "no auth",
        "shared token",
        "JWT (seen before)",
        "JWT (first sight)",
        "hook (async)",
        "hook (sync)",
    }


def test_the_scale_bench_runs_its_clients_against_a_real_server(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import json

    from bench import scale
    from bench._sleep_latency import parse

    monkeypatch.setenv(scale.KEEP_CLIENTS_ENV, str(tmp_path))
    # a setting under trial reaches the servers (2 ms slices: their loops serve requests
    # first) and is recorded with the row; the model's steps drawn around their mean
    report = scale.run(quick=True, server_env={"EVE_REQUEST_SLICE_MS": "2"}, model_spread=0.5)
    row = report["configs"]["sqlite-2w-4"]
    assert row["server_env"] == {"EVE_REQUEST_SLICE_MS": "2"}
    assert row["model"] == "benchsleep/0.1x3~0.5" and row["model_spread"] == 0.5
    assert row["model_step_mean_s"] > 0 and sum(row["posts_by_second"]) > 0
    # the server's model slept what the report computes from each turn's key: no turn took
    # less (at 0.1 s a step, drawn apart a turn's model time differs by 0.12 s on average;
    # a timer may fire up to a millisecond early)
    spec = parse(row["model"].removeprefix("benchsleep/"))
    turns = [t for f in tmp_path.glob("sqlite-2w-4-clients-*.json") for t in json.loads(f.read_text())["turns"]]  # fmt: skip
    ended = [t for t in turns if "turn_s" in t]
    assert ended and all(t["turn_s"] > spec.turn_model_seconds(t["key"]) - 0.003 for t in ended)
    # the clients' turns ended in the window, and the server's tree was measured
    assert row["turns_in_window"] > 0 and row["turns_failed"] == 0
    assert row["server_cpu_ms_per_turn"] > 0 and row["rss_mb"] > 0
    assert row["bytes_stored_per_turn"] > 0
    # each worker's process measured, and the window's turns found with their workers
    assert set(row["cpu_ms_per_turn_by_worker"]) == {"bench-0", "bench-1"}
    assert sum(row["turns_by_worker"].values()) > 0


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (["--server-env", "REQUEST_SLICE_MS=2"], "expected EVE_NAME=VALUE"),
        (["--model-spread", "1.5"], "--model-spread: '1.5': from 0 to 1.0"),
        (["--model-spread", "wide"], "--model-spread: 'wide': from 0 to 1.0"),
    ],
)
def test_the_scale_bench_refuses_an_option_it_cannot_read(
    argv: list[str], why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench import scale

    with pytest.raises(SystemExit) as exited:
        scale.main(argv)
    assert exited.value.code == 2
    assert why in capsys.readouterr().err


def test_the_sandbox_call_bench_times_each_case() -> None:
    from bench import sandbox_call
    from eve.errors import SandboxUnavailable

    try:
        timings = asyncio.run(sandbox_call._measure(1))
    except SandboxUnavailable as error:
        pytest.skip(f"bubblewrap cannot run here: {error}")
    assert {name: len(samples) for name, samples in timings.items()} == {
        "bare bash -c": 1,
        "local": 1,
        "bubblewrap": 1,
    }


def test_the_scale_profile_samples_only_the_lock_holder_when_asked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    started: list[list[str]] = []

    class Started:
        returncode = 0

        def __init__(self, command: list[str], **_: object) -> None:
            started.append(command)

        def poll(self) -> int:
            return 0

        def wait(self, _timeout: float) -> int:
            return 0

    monkeypatch.setattr(_pyspy.shutil, "which", lambda *_a, **_k: "py-spy")
    monkeypatch.setattr(_pyspy.subprocess, "Popen", Started)
    kept = tmp_path / "kept.txt"
    monkeypatch.setenv(_pyspy.KEEP_SETTING, str(kept))
    plain = _pyspy.record(1, 1.0, tmp_path / "plain.txt")
    monkeypatch.setenv(_pyspy.PROFILE_SETTING, "gil")
    held = _pyspy.record(1, 1.0, tmp_path / "held.txt")
    assert "--gil" not in started[0] and "--gil" in started[1]
    raw = 'process 1:"eve";_run (eve/sessions/turn_workflow.py:3) 7\n'
    held.out.write_text(raw)
    summary = held.summary()
    assert summary["gil"] is True and summary["samples"] == 7
    assert kept.read_text() == raw
    assert not plain.gil


def test_the_service_start_bench_starts_on_the_database_it_made(tmp_path: Path) -> None:
    from bench import service_start
    from bench.startup import ONE_TOOL_AGENT, write_agent

    root = write_agent(tmp_path / "agent", ONE_TOOL_AGENT)
    compile_to_disk(root)
    walls, cpus, stops = asyncio.run(service_start._starts(root, 1))
    assert len(walls) == len(cpus) == len(stops) == 1


def test_the_event_redaction_bench_measures_both_ways() -> None:
    from bench import event_redaction

    found = event_redaction.measure(1)
    assert set(found) == set(event_redaction.SIZES)
    assert all(each > 0 and together > 0 for each, together in found.values())


def test_the_group_hold_bench_times_groups_and_counts_their_statements() -> None:
    from bench import group_hold
    from eve.sessions import group_commit

    committed = group_commit._committed
    found = group_hold.measure(1, contend=True)
    assert found["hold_ms_p50"] > 0 and found["cpu_ms_p50"] > 0
    # a turn's body start, three steps with their records, its end: every kind ran
    assert {"BEGIN IMMEDIATE", "COMMIT", "UPDATE eve_accepted"} <= set(found["by_kind"])
    assert found["statements_a_group"] > 3
    assert group_commit._committed is committed  # its timing taken off again
