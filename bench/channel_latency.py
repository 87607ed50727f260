"""What a channel adds to a turn's latency over eve's native stream.

One uvicorn on loopback (in a thread of this process) serves a small example-style agent on
``offline/test`` (one tool, so a turn has a tool call, its result and a streamed answer)
with one channel per kind that has a probe in ``bench/channel_probes/<kind>.py``. A kind
without a probe, or whose module or protocol package is not installed, is skipped and
named. Each round runs one turn through every door in a rotating order: the native stream
(``POST /eve/v1/session`` then ``GET /eve/v1/session/{id}/stream`` until the session rests)
and each kind's probe. Per door: the median first byte (message sent → first byte of the
answer) and the median gap between consecutive events, and both as a ratio to the native
stream's. The model answers at once, so what remains is eve's and the channel's own cost.

Run alone with ``python -m bench.channel_latency [--quick]``. Results land in
``bench/results/channel_latency.{json,md}``.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import statistics
import sys
import tempfile
import textwrap
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx

from bench._machine import machine_info, package_version
from bench._results import publish
from bench.channel_probes import Probe

ROUNDS, QUICK_ROUNDS = 30, 3
WARMUP = 2
TOKEN = "channel-latency-bench-token-0123456789"
NATIVE = "native"
#: events after which a session waits for someone: a followed stream stops there
RESTING = ("session.waiting", "turn.waiting")

AGENT = {
    "agent/agent.py": """
        from eve import define_agent
        default = define_agent(model="offline/test")
    """,
    "agent/instructions.md": "You sell hardware. Look prices up before you answer.\n",
    "agent/tools/get_price.py": """
        from eve.tools import tool

        @tool
        def get_price(item: str) -> str:
            '''The price of an item in the shop.'''
            return f"{item}: 42.00 EUR"
    """,
}


@dataclass
class Door:
    """One way into the agent: the native stream, or a channel kind's probe."""

    name: str
    path: str
    module: ModuleType | None = None
    probes: list[Probe] = field(default_factory=list)

    async def run(self, client: httpx.AsyncClient) -> Probe:
        if self.module is None:
            return await native_probe(client)
        probe: Probe = await self.module.probe(client, self.path)
        return probe


async def native_probe(client: httpx.AsyncClient) -> Probe:
    """One turn through the session API, its events read from the followed stream."""
    sent = time.perf_counter()
    created = await client.post("/eve/v1/session", json={"message": "What does the anvil cost?"})
    created.raise_for_status()
    session = created.json()["sessionId"]
    marks: list[float] = []
    async with client.stream("GET", f"/eve/v1/session/{session}/stream") as stream:
        stream.raise_for_status()
        async for line in stream.aiter_lines():
            if line.strip():
                marks.append(time.perf_counter())
                if json.loads(line)["type"] in RESTING:
                    break
    return Probe.of(sent, marks)


def probe_modules() -> tuple[dict[str, ModuleType], dict[str, str]]:
    """The probes of the kinds eve knows, and why each other kind is skipped."""
    from eve.channels.kind_modules import load_kind
    from eve.channels.kinds import KIND_MODULES
    from eve.errors import ChannelKindUnavailable

    found: dict[str, ModuleType] = {}
    skipped: dict[str, str] = {}
    for kind in KIND_MODULES:
        try:
            module = importlib.import_module(f"bench.channel_probes.{kind}")
        except ModuleNotFoundError as error:
            if error.name != f"bench.channel_probes.{kind}":
                raise
            skipped[kind] = "no probe in bench/channel_probes/"
            continue
        try:
            load_kind(kind)
        except ChannelKindUnavailable as unavailable:
            skipped[kind] = str(unavailable)
            continue
        found[kind] = module
    return found, skipped


def write_app(root: Path, probes: dict[str, ModuleType]) -> None:
    files = dict(AGENT)
    for kind, module in probes.items():
        source = getattr(module, "SOURCE", None)
        files[f"agent/channels/{kind}.py"] = source or (
            f"from eve.channels import {kind}\n\ndefault = {kind}(**{module.OPTIONS!r})\n"
        )
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


class _Serving:
    """uvicorn serving the eve app on a loopback port, in a thread with its own loop."""

    def __init__(self, app_root: Path) -> None:
        import uvicorn

        from eve.server import eve_app

        app = eve_app(app_root, token=TOKEN, model="offline/test")
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("uvicorn stopped before it served")
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


async def _measure(url: str, doors: list[Door], rounds: int) -> None:
    headers = {"authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as client:
        for _ in range(WARMUP):
            for door in doors:
                await door.run(client)
        for index in range(rounds):
            # a rotating start, so no door always runs right after another's turn
            for door in doors[index % len(doors) :] + doors[: index % len(doors)]:
                door.probes.append(await door.run(client))


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def _stats(door: Door, native: Door | None) -> dict[str, Any]:
    first = statistics.median(p.first_byte for p in door.probes)
    gaps = [g for p in door.probes for g in p.gaps]
    # a door that answers in one piece (Slack's one reply per stop) has no gap to measure
    gap = statistics.median(gaps) if gaps else None
    last = statistics.median(p.first_byte + sum(p.gaps) for p in door.probes)
    row: dict[str, Any] = {
        "path": door.path,
        "turns": len(door.probes),
        "events_per_turn": statistics.median(len(p.gaps) + 1 for p in door.probes),
        "first_byte_ms_median": _ms(first),
        "gap_ms_median": None if gap is None else _ms(gap),
        "last_byte_ms_median": _ms(last),
    }
    base = _stats(native, None) if native is not None else row
    for figure in ("first_byte", "gap", "last_byte"):
        value = row[f"{figure}_ms_median"]
        row[f"{figure}_ratio"] = (
            None if value is None else round(value / base[f"{figure}_ms_median"], 2)
        )
    return row


def _cell(value: float | None, spec: str = "") -> str:
    return "—" if value is None else format(value, spec)


def _markdown(report: dict[str, Any]) -> str:
    lines = [
        "# channel_latency",
        "",
        f"{report['date']} · {report['rounds']} turns per door · offline/test · "
        f"1-minute load {report['machine']['load_average_1m']:.1f}",
        "",
        "| door | path | events/turn | first byte (ms) | × native | gap (ms) | × native "
        "| last byte (ms) | × native |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in report["doors"].items():
        lines.append(
            f"| {name} | `{row['path']}` | {row['events_per_turn']} | "
            f"{row['first_byte_ms_median']} | {row['first_byte_ratio']:.2f} | "
            f"{_cell(row['gap_ms_median'])} | {_cell(row['gap_ratio'], '.2f')} | "
            f"{row['last_byte_ms_median']} | {row['last_byte_ratio']:.2f} |"
        )
    lines += ["", "Medians over the turns (a gap: between two consecutive events of a turn)."]
    if report["skipped"]:
        lines += ["", "Skipped:", ""]
        lines += [f"- `{kind}`: {why}" for kind, why in report["skipped"].items()]
    return "\n".join(lines) + "\n"


def run(*, quick: bool = False) -> dict[str, Any]:
    from eve.compiler import compile_to_disk

    probes, skipped = probe_modules()
    rounds = QUICK_ROUNDS if quick else ROUNDS
    with tempfile.TemporaryDirectory(prefix="eve-channel-latency-") as tmp:
        root = Path(tmp)
        write_app(root, probes)
        compile_to_disk(root)
        doors = [Door(NATIVE, "/eve/v1/session/{id}/stream")]
        doors += [Door(kind, f"/channels/{kind}", module) for kind, module in probes.items()]
        with _Serving(root) as url:
            asyncio.run(_measure(url, doors, rounds))
    native = doors[0]
    report = {
        "name": "channel_latency",
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": machine_info(),
        "versions": {"eve": package_version("eve"), "uvicorn": package_version("uvicorn")},
        "rounds": rounds,
        "doors": {door.name: _stats(door, native) for door in doors},
        "skipped": skipped,
    }
    publish("channel_latency", report, _markdown(report), quick=quick)
    return report


if __name__ == "__main__":
    run(quick="--quick" in sys.argv[1:])
