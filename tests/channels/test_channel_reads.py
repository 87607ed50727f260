"""A channel serves a turn by reading that turn's stretch of the session's log, not the whole
log from index 0: measured with the ``channel_reads`` benchmark's code on a small session,
every kind reads no more than the turn's own events, however long the history before it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from bench.channel_latency import TOKEN, probe_modules, write_app
from bench.channel_reads import KINDS, ReadCounter, measure
from eve.channels.declaration import ChannelDeclaration
from tests.sessions.inprocess import ROOT, InProcessServer

#: history sizes (turns) the test measures at: the second is four times the first
SIZES = (2, 8)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessServer]:
    root = tmp_path_factory.mktemp("reads")
    probes, _ = probe_modules()
    write_app(root, {kind: probes[kind] for kind in KINDS})
    channels = [
        ChannelDeclaration(
            name=kind, kind=kind, path=f"/channels/{kind}", options=probes[kind].OPTIONS
        )
        for kind in KINDS
    ]
    running = InProcessServer(
        root, env={"EVE_API_TOKEN": TOKEN}, token=TOKEN, channels=channels
    ).start()
    yield running
    running.stop()


def test_every_kind_reads_its_turn_not_the_history(server: InProcessServer) -> None:
    counter = ReadCounter()

    async def measured() -> dict[str, Any]:
        async with httpx.AsyncClient(
            transport=server.async_transport(), base_url=ROOT, headers=server.headers()
        ) as client:
            return await measure(client, SIZES, counter)

    uninstall = counter.install()
    try:
        rows = asyncio.run(measured())
    finally:
        uninstall()
    for size in map(str, SIZES):
        for kind in KINDS:
            row = rows[size][kind]
            # from index 0, a turn reads the whole log before it too (row["log"] events)
            assert 0 < row["events_read"] <= row["turn_events"], (size, kind, row)
