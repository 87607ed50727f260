"""A POST's answer says its time inside the server (``Server-Timing``); once any request is
answered, what it left behind is no longer served first (``eve/server/server_timing.py``)."""

from __future__ import annotations

import asyncio
import time

from starlette.types import Message, Receive, Scope, Send

from eve.server.server_timing import ServerTiming
from eve.server.serving import READ_AT, SERVING, serving_context
from eve.sessions.claim_now import CLAIM_TIMING, ClaimTiming, claim_begins, note_claim


async def _app(scope: Scope, receive: Receive, send: Send) -> None:
    note_claim("loop", scope[READ_AT])
    await send({"type": "http.response.start", "status": 202, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


def _serve(method: str) -> tuple[list[Message], bool]:
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    async def served() -> bool:
        scope = {"type": "http", "method": method, READ_AT: time.perf_counter()}
        await ServerTiming(_app)(scope, receive, send)
        serving = SERVING.get()
        assert serving is not None
        return serving.urgent

    async def main() -> bool:
        return await asyncio.get_running_loop().create_task(served(), context=serving_context())

    return sent, asyncio.run(main())


def test_a_post_says_its_answer_and_claim_times_and_is_served_first_no_longer() -> None:
    sent, urgent = _serve("POST")
    headers = dict(sent[0]["headers"])
    answer, claim = headers[b"server-timing"].decode().split(", ")
    assert answer.startswith("answer;dur=")
    assert claim.startswith("claim;dur=") and claim.endswith(';desc="loop"')
    assert not urgent


def test_another_request_carries_no_timing_and_is_served_first_no_longer() -> None:
    sent, urgent = _serve("GET")
    assert b"server-timing" not in dict(sent[0]["headers"])
    assert not urgent


def test_a_claim_left_to_a_thread_counts_from_its_first_try() -> None:
    timing = ClaimTiming()
    token = CLAIM_TIMING.set(timing)
    try:
        tried = claim_begins()  # on the loop: NOT_NOW
        claim_begins()  # a second try (a create left to a thread claims its first turn)
        later = time.perf_counter() + 3600.0  # the thread's claim, begun (much) later
        note_claim("thread", later)
    finally:
        CLAIM_TIMING.reset(token)
    assert timing.where == "thread"
    assert timing.began == tried  # the first try's
    # from the first try: the thread's own part alone would be negative here
    assert timing.seconds >= 0.0
