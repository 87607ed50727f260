"""Closed-loop clients of the scale benchmark, one process holding many (``bench/scale.py``).

Each client owns one session: it follows the session's stream for the whole run, and sends a
message, waits until the stream says the turn ended (``session.waiting``), and sends the next
one at once. The process creates its sessions, prints ``ready``, reads the schedule (wall
clock times: start, measure from, measure until) as one JSON line on stdin, runs, and writes
every finished turn (when it was sent, how long the POST and the whole turn took) as JSON.

The clients use one ``httpx.AsyncClient`` per process with no pool limit (a stream and a POST
per client at once). Their own CPU time is in the output, so the report can say whether the
clients, rather than the server, were the bottleneck.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

#: the session is idle again: the turn's checkpoint is saved and its events are written
TURN_END = b'"type":"session.waiting"'
TURN_FAILED = b'"type":"turn.failed"'
#: how long after the run's end the clients wait for the turns they sent
LATE_SECONDS = 15.0


@dataclass(kw_only=True)
class Client:
    url: str
    session_id: str
    #: the turns that ended, by turn id, in the order the stream said so
    ended: dict[str, asyncio.Event] = field(default_factory=dict)
    failed: int = 0
    next_index: int = 0
    reconnects: int = 0

    def waiter(self, turn_id: str) -> asyncio.Event:
        return self.ended.setdefault(turn_id, asyncio.Event())

    async def follow(self, http: httpx.AsyncClient) -> None:
        """Follow the stream forever, reconnecting from the next index when it ends."""
        path = f"{self.url}/session/{self.session_id}/stream"
        while True:
            try:
                async with http.stream("GET", path, params={"startIndex": self.next_index}) as r:
                    async for line in r.aiter_lines():
                        self._line(line.encode())
            except httpx.HTTPError:
                await asyncio.sleep(0.5)
            self.reconnects += 1

    def _line(self, line: bytes) -> None:
        if not line:
            return  # a heartbeat
        self.next_index += 1  # indexes are dense: no need to decode every event
        if TURN_FAILED in line:
            self.failed += 1
        if TURN_END in line:
            turn_id = json.loads(line)["data"]["turn_id"]
            self.waiter(turn_id).set()


async def _create(http: httpx.AsyncClient, url: str) -> str:
    for _ in range(20):
        try:
            answer = await http.post(f"{url}/session", json={})
            if answer.status_code == 202:
                session_id: str = answer.json()["sessionId"]
                return session_id
        except httpx.HTTPError:
            pass
        await asyncio.sleep(0.5)
    raise RuntimeError(f"could not create a session on {url}")


async def _run_client(
    client: Client,
    http: httpx.AsyncClient,
    turns: list[dict[str, Any]],
    *,
    start: float,
    until: float,
) -> None:
    await asyncio.sleep(max(0.0, start - time.time()))
    follower = asyncio.create_task(client.follow(http))
    try:
        while time.time() < until:
            sent = time.time()
            began = time.perf_counter()
            try:
                answer = await http.post(
                    f"{client.url}/session/{client.session_id}", json={"message": "go"}
                )
            except httpx.HTTPError:
                await asyncio.sleep(0.5)
                continue
            posted = time.perf_counter()
            # recorded now: a turn still running at the end still had its POST answered
            turn: dict[str, Any] = {
                "sent": sent,
                "post_s": posted - began,
                "status": answer.status_code,
            }
            turns.append(turn)
            if answer.status_code != 202:
                await asyncio.sleep(0.5)
                continue
            await client.waiter(answer.json()["turnId"]).wait()
            ended = time.perf_counter()
            turn |= {"ended": sent + (ended - began), "turn_s": ended - began}
    finally:
        follower.cancel()


async def _main(urls: Sequence[str], count: int, *, offset: int) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    timeout = httpx.Timeout(120.0, read=None)  # a followed stream may be quiet for long
    headers = {"Authorization": f"Bearer {os.environ['EVE_BENCH_TOKEN']}"}
    async with httpx.AsyncClient(limits=limits, timeout=timeout, headers=headers) as http:
        # clients spread over the servers' addresses in turn (several hosts)
        targets = [urls[(offset + i) % len(urls)] for i in range(count)]
        semaphore = asyncio.Semaphore(32)

        async def create(url: str) -> Client:
            async with semaphore:
                return Client(url=url, session_id=await _create(http, url))

        clients = await asyncio.gather(*(create(url) for url in targets))
        print("ready", flush=True)
        schedule = json.loads(await asyncio.to_thread(sys.stdin.readline))
        start, ramp, until = schedule["start"], schedule["ramp_s"], schedule["until"]
        cpu_before = os.times()
        turns: list[dict[str, Any]] = []
        runs = [
            # starts spread over one ramp, so the clients do not all move in step
            _run_client(c, http, turns, start=start + ramp * i / max(1, count), until=until)
            for i, c in enumerate(clients)
        ]
        # a turn still running at the end is not waited for long: it is outside the window
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*runs), until - time.time() + LATE_SECONDS)
        cpu_after = os.times()
    return {
        "turns": turns,
        "failed": sum(c.failed for c in clients),
        "reconnects": sum(c.reconnects for c in clients),
        "cpu_s": (cpu_after.user + cpu_after.system) - (cpu_before.user + cpu_before.system),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", action="append", required=True)
    parser.add_argument("--clients", type=int, required=True)
    parser.add_argument("--offset", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    result = asyncio.run(_main(args.url, args.clients, offset=args.offset))
    with open(args.out, "w", encoding="utf-8") as out:
        json.dump(result, out)


if __name__ == "__main__":
    main()
