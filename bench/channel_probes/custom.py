"""The ``custom`` kind's latency probe, and the model for the other kinds' probes.

``SOURCE`` is the channel the bench declares (``agent/channels/custom.py``): an inbox over
sessions, which the tests of ``define_channel`` drive too. ``POST /`` starts a session with
``{"text"}``; ``POST /{session_id}`` sends ``{"text"}`` or answers ``{"request_id",
"option_id"}``; ``POST /{session_id}/cancel`` cancels; ``GET /{session_id}/log?start=N``
reads the session's log from index N, and with ``follow=1`` streams it as NDJSON until the
session rests (waits for a message or an answer).

The probe is one turn as the channel's client sees it: the time from sending the message to
the first byte of the followed log, then the gaps between the log's lines.
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from bench.channel_probes import Probe

KIND = "custom"
#: a define_channel carries code, so the bench writes ``SOURCE`` rather than options
OPTIONS: dict[str, Any] = {}


async def probe(client: httpx.AsyncClient, path: str) -> Probe:
    sent = time.perf_counter()
    created = await client.post(path, json={"text": "What does the anvil cost?"})
    created.raise_for_status()
    session = created.json()["sessionId"]
    marks: list[float] = []
    async with client.stream("GET", f"{path}/{session}/log", params={"follow": "1"}) as log:
        log.raise_for_status()
        async for line in log.aiter_lines():
            if line:
                marks.append(time.perf_counter())
    return Probe.of(sent, marks)


SOURCE = """
import json

from starlette.responses import JSONResponse, StreamingResponse

from eve.channels import define_channel
from eve.sessions import InputResponse

#: events after which the session waits for someone: a followed log stops there
RESTING = ("session.waiting", "turn.waiting")


def refused(message):
    return JSONResponse({"ok": False, "error": message}, status_code=400)


async def read_log(request, sessions, session_id):
    start = int(request.query_params.get("start", "0"))
    follow = request.query_params.get("follow") == "1"
    lines = await sessions.events(session_id, start, follow=follow)
    if not follow:
        return JSONResponse([json.loads(line) async for line in lines if line])

    async def until_resting():
        async for line in lines:
            if line:
                yield line + "\\n"
                if json.loads(line)["type"] in RESTING:
                    return

    return StreamingResponse(until_resting(), media_type="application/x-ndjson")


async def inbox(request, sessions):
    session_id = request.path_params.get("session_id")
    if request.method == "GET":
        return await read_log(request, sessions, session_id)
    if request.url.path.endswith("/cancel"):
        return JSONResponse({"cancelled": await sessions.cancel(session_id)})
    try:
        body = await request.json()
    except ValueError:
        return refused("the body is not JSON")
    if not isinstance(body, dict):
        return refused("the body is not a JSON object")
    if session_id is not None and "request_id" in body:
        answer = InputResponse(request_id=body["request_id"], option_id=body["option_id"])
        accepted = await sessions.respond(session_id, [answer])
    elif not isinstance(body.get("text"), str) or not body["text"]:
        return refused("send {\\"text\\": \\"...\\"}")
    elif session_id is None:
        accepted = await sessions.create(body["text"])
    else:
        accepted = await sessions.send(session_id, body["text"])
    return JSONResponse(accepted.answer(), status_code=202)


default = define_channel(
    routes=["POST /", "POST /{session_id}", "POST /{session_id}/cancel", "GET /{session_id}/log"],
    handler=inbox,
)
"""
