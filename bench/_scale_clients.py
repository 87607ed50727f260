"""Closed-loop clients of the scale benchmark, one process holding many (``bench/scale.py``).

Each client owns one session: it follows the session's stream for the whole run, and sends a
message, waits until the stream says the turn ended (``session.waiting``), and sends the next
one at once. A message's text is ``go <key>``, the key naming the client and its turn: the
model draws the turn's latency from it (``_sleep_latency.py``), and the report reads each
turn's model time from the key each turn records. The process creates its sessions, prints
``ready``, reads the schedule (wall clock times: start, measure from, measure until) as one
JSON line on stdin, runs, and writes every finished turn (when it was sent, how long the POST
and the whole turn took, its key) as JSON.

The clients speak HTTP/1.1 themselves, on asyncio's streams (``_http.py``): a general client
(httpx) spent 4 to 5 ms of CPU a turn, mostly splitting and decoding the stream's lines, so
at N = 1,000 the clients alone would have taken half of this machine. Their own CPU time is
in the output, so the report can say whether the clients, rather than the server, were the
bottleneck.

With ``--first-every N`` a client's every N-th message opens a new session of its own
(``POST /session`` with the message: a session's first message) and it goes on there, so
first messages and follow-ups are timed apart (each turn says which it was). With
``--tokens FILE`` each client sends the token at its place in the file (its own principal)
rather than the shared one.

A POST's time as a client sees it includes the client's own event loop: an answer that
arrives while the loop runs other clients' callbacks waits for them. So each process also
measures its loop's lag through the window (``LagProbe``), and keeps what the server says a
POST took inside it (its ``Server-Timing`` header: from the request read to the ``202``
written, and where its claim ran), so the report can tell the server's time from the
client's.
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

from bench._http import Connection, HttpFailed, Origin, stream_lines
from bench._sleep_latency import MESSAGE_PREFIX

#: the session is idle again: the turn's checkpoint is saved and its events are written
TURN_END = b'"type":"session.waiting"'
TURN_FAILED = b'"type":"turn.failed"'
#: how long after the run's end the clients wait for the turns they sent
LATE_SECONDS = 15.0
#: how long a POST may take before the client gives up on it (and sends again)
POST_TIMEOUT_SECONDS = 120.0
#: how often the lag probe wakes: its oversleep is the loop's lag
LAG_TICK_SECONDS = 0.02


class LagProbe:
    """The process's event loop lag: how late a sleep of ``LAG_TICK_SECONDS`` wakes, from
    ``since`` to ``until`` (wall clock)."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    async def run(self, *, since: float, until: float) -> None:
        await asyncio.sleep(max(0.0, since - time.time()))
        while time.time() < until:
            asked = time.perf_counter()
            await asyncio.sleep(LAG_TICK_SECONDS)
            self.seconds.append(time.perf_counter() - asked - LAG_TICK_SECONDS)


def server_timing(headers: dict[bytes, bytes]) -> dict[str, Any]:
    """What a ``Server-Timing`` header says (``answer;dur=12.5, claim;dur=0.3;desc="loop"``),
    as ``{"answer_s": 0.0125, "claim_s": 0.0003, "claim": "loop"}``; empty without one."""
    found: dict[str, Any] = {}
    for metric in headers.get(b"server-timing", b"").decode().split(","):
        name, *params = [part.strip() for part in metric.split(";")]
        for param in params:
            key, _, value = param.partition("=")
            if key == "dur":
                found[f"{name}_s"] = float(value) / 1000
            elif key == "desc":
                found[name] = value.strip('"')
    return found


@dataclass(kw_only=True)
class Client:
    origin: Origin
    session_id: str
    #: the client's requests' kept-alive connection (its stream has one of its own)
    connection: Connection
    #: the turns that ended, by turn id, in the order the stream said so
    ended: dict[str, asyncio.Event] = field(default_factory=dict)
    failed: int = 0
    next_index: int = 0
    reconnects: int = 0
    #: the stream's chunks (the server's writes; ``next_index`` counts its events)
    chunks: int = 0
    #: events of the sessions it left (``moved``)
    left_events: int = 0

    @property
    def path(self) -> str:
        return f"{self.origin.prefix}/session/{self.session_id}"

    def waiter(self, turn_id: str) -> asyncio.Event:
        return self.ended.setdefault(f"{self.session_id}/{turn_id}", asyncio.Event())

    def moved(self, session_id: str) -> None:
        """Follow ``session_id`` from now on (a new session, its first message sent)."""
        self.left_events += self.next_index
        self.session_id, self.next_index = session_id, 0

    async def follow(self) -> None:
        """Follow the stream forever, reconnecting from the next index when it ends (a
        client that moves to another session cancels it and follows that one)."""
        following = self.session_id
        while True:
            try:
                path = f"{self.path}/stream?startIndex={self.next_index}"
                async with stream_lines(self.origin, path) as chunks:
                    async for lines in chunks:
                        self.chunks += 1
                        for line in lines:
                            self._line(line, following)
            except (HttpFailed, OSError, asyncio.IncompleteReadError):
                await asyncio.sleep(0.5)
            self.reconnects += 1

    def _line(self, line: bytes, session_id: str) -> None:
        if not line:
            return  # a heartbeat
        self.next_index += 1  # indexes are dense: no need to decode every event
        if TURN_FAILED in line:
            self.failed += 1
        if TURN_END in line:
            turn_id = json.loads(line)["data"]["turn_id"]
            self.ended.setdefault(f"{session_id}/{turn_id}", asyncio.Event()).set()


async def _create(connection: Connection) -> str:
    origin = connection.origin
    for _ in range(20):
        with contextlib.suppress(HttpFailed, OSError, asyncio.IncompleteReadError):
            async with asyncio.timeout(POST_TIMEOUT_SECONDS):
                status, body = await connection.request("POST", f"{origin.prefix}/session", b"{}")
            if status == 202:
                session_id: str = json.loads(body)["sessionId"]
                return session_id
        await asyncio.sleep(0.5)
    raise RuntimeError(f"could not create a session on {origin.url}")


async def _run_client(
    client: Client,
    turns: list[dict[str, Any]],
    *,
    start: float,
    until: float,
    name: str,
    first_every: int = 0,
) -> None:
    await asyncio.sleep(max(0.0, start - time.time()))
    follower = asyncio.create_task(client.follow())
    sent_turns = 0
    try:
        while time.time() < until:
            first = first_every > 0 and sent_turns > 0 and sent_turns % first_every == 0
            path = f"{client.origin.prefix}/session" if first else client.path
            # the turn's key: the model's latency for it is drawn from it (``_sleep_latency``)
            key = f"{name}.{sent_turns}"
            message = json.dumps({"message": MESSAGE_PREFIX + key}).encode()
            sent = time.time()
            began = time.perf_counter()
            try:
                async with asyncio.timeout(POST_TIMEOUT_SECONDS):
                    exchange = client.connection.exchange("POST", path, message)
                    status, headers, body = await exchange
            except (HttpFailed, OSError, asyncio.IncompleteReadError, TimeoutError):
                await asyncio.sleep(0.5)
                continue
            posted = time.perf_counter()
            # recorded now: a turn still running at the end still had its POST answered
            turn: dict[str, Any] = {
                "sent": sent, "post_s": posted - began, "status": status, "key": key
            }  # fmt: skip
            turn |= server_timing(headers) | ({"first": True} if first else {})
            turns.append(turn)
            if status != 202:
                await asyncio.sleep(0.5)
                continue
            sent_turns += 1
            answer = json.loads(body)
            if first:
                follower.cancel()
                client.moved(answer["sessionId"])
                follower = asyncio.create_task(client.follow())
            await client.waiter(answer["turnId"]).wait()
            ended = time.perf_counter()
            turn |= {"ended": sent + (ended - began), "turn_s": ended - began}
    finally:
        follower.cancel()


async def _main(
    urls: Sequence[str],
    count: int,
    *,
    offset: int,
    first_every: int = 0,
    tokens: Sequence[str] = (),
) -> dict[str, Any]:
    shared = os.environ["EVE_BENCH_TOKEN"]
    # clients spread over the servers' addresses in turn (several hosts), each with its own
    # token if it has one
    targets = [
        Origin.of(urls[(offset + i) % len(urls)], token=tokens[i] if tokens else shared)
        for i in range(count)
    ]
    semaphore = asyncio.Semaphore(32)

    async def create(origin: Origin) -> Client:
        connection = Connection(origin=origin)
        async with semaphore:
            session_id = await _create(connection)
        return Client(origin=origin, session_id=session_id, connection=connection)

    clients = await asyncio.gather(*(create(origin) for origin in targets))
    print("ready", flush=True)
    schedule = json.loads(await asyncio.to_thread(sys.stdin.readline))
    start, ramp, until = schedule["start"], schedule["ramp_s"], schedule["until"]
    lag = LagProbe()
    probing = asyncio.create_task(lag.run(since=schedule.get("measure_from", start), until=until))
    cpu_before = os.times()
    turns: list[dict[str, Any]] = []
    runs = [
        # starts spread over one ramp, so the clients do not all move in step
        _run_client(
            c,
            turns,
            start=start + ramp * i / max(1, count),
            until=until,
            name=f"{offset}.{i}",
            first_every=first_every,
        )
        for i, c in enumerate(clients)
    ]
    # a turn still running at the end is not waited for long: it is outside the window
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.gather(*runs), until - time.time() + LATE_SECONDS)
    cpu_after = os.times()
    probing.cancel()
    return {
        "turns": turns,
        "failed": sum(c.failed for c in clients),
        "reconnects": sum(c.reconnects for c in clients),
        # connections the clients' requests opened: one each, unless the server closed some
        "request_connections": sum(c.connection.opened for c in clients),
        "stream_chunks": sum(c.chunks for c in clients),
        "stream_events": sum(c.next_index + c.left_events for c in clients),
        "loop_lag_s": lag.seconds,
        "cpu_s": (cpu_after.user + cpu_after.system) - (cpu_before.user + cpu_before.system),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", action="append", required=True)
    parser.add_argument("--clients", type=int, required=True)
    parser.add_argument("--offset", type=int, default=0)
    parser.add_argument("--out", required=True)
    parser.add_argument("--first-every", type=int, default=0)
    parser.add_argument("--tokens", help="a JSON list of one token per client")
    args = parser.parse_args(argv)
    tokens: list[str] = []
    if args.tokens:
        with open(args.tokens, encoding="utf-8") as listed:
            tokens = json.load(listed)
    result = asyncio.run(
        _main(
            args.url, args.clients, offset=args.offset, first_every=args.first_every, tokens=tokens
        )
    )
    with open(args.out, "w", encoding="utf-8") as out:
        json.dump(result, out)


if __name__ == "__main__":
    main()
