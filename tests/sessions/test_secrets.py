"""No secret in a response, the event log or the database files."""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import AppFactory
from tests.models.anthropic_script import end, start, text_block, tool_block
from tests.models.sse_server import Reply, ScriptedServer, anthropic_sse, json_reply
from tests.sessions.apps import SCRIPTED_AGENT, call, say, scripted_app
from tests.sessions.harness import count, script
from tests.sessions.inprocess import InProcessServer

TOKEN = "tok_" + "s3cr3tz9" * 6


def test_a_tool_that_returns_a_secret_stores_only_the_redaction(make_app: AppFactory) -> None:
    root = scripted_app(make_app, [call("secret"), say("ok")], tools=("secret",))
    server = InProcessServer(root, env={"EVE_API_TOKEN": TOKEN}, token=TOKEN).start()
    try:
        session = server.create("tell me")
        events = server.wait_for(session, count("session.waiting"))
        raw = server.get(f"/session/{session}/stream?follow=false").text
    finally:
        server.stop()
    [result] = [e["data"]["output"] for e in events if e["type"] == "action.result"]
    assert result == "the token is [redacted]"
    assert TOKEN not in raw
    assert_nowhere_stored(root, TOKEN)


def stored_values(root: Path) -> Iterator[bytes]:
    """Every file under .eve/sessions whole, and every text or blob cell of its SQLite
    databases also base64-decoded (DBOS stores workflow inputs and step outputs encoded)."""
    paths = sorted((root / ".eve/sessions").glob("*.sqlite"))
    assert paths, "the embedded databases live under .eve/sessions"
    for path in paths:
        yield path.read_bytes()
    for _, cell in stored_cells(root):
        yield cell


def stored_cells(root: Path) -> Iterator[tuple[str, bytes]]:
    """Every text or blob cell of the embedded databases by table, also base64-decoded."""
    for path in sorted((root / ".eve/sessions").glob("*.sqlite")):
        with contextlib.closing(sqlite3.connect(path)) as db:
            tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            for table in tables:
                for row in db.execute(f'SELECT * FROM "{table}"'):
                    for cell in row:
                        if isinstance(cell, str | bytes):
                            raw = cell.encode() if isinstance(cell, str) else cell
                            yield table, raw
                            with contextlib.suppress(binascii.Error, ValueError):
                                yield table, base64.b64decode(raw, validate=True)


def assert_nowhere_stored(root: Path, secret: str) -> None:
    for value in stored_values(root):
        assert secret.encode() not in value


def test_a_secret_in_a_message_is_stored_only_as_the_redaction(make_app: AppFactory) -> None:
    root = scripted_app(make_app, [say("noted")])
    server = InProcessServer(root, env={"EVE_API_TOKEN": TOKEN}, token=TOKEN).start()
    try:
        session = server.create(f"my token is {TOKEN}, keep it safe")
        events = server.wait_for(session, count("session.waiting"))
    finally:
        server.stop()
    [received] = [e["data"]["message"] for e in events if e["type"] == "message.received"]
    assert received == "my token is [redacted], keep it safe"
    assert_nowhere_stored(root, TOKEN)


def test_a_model_that_echoes_a_secret_leaves_only_the_redaction(make_app: AppFactory) -> None:
    root = scripted_app(make_app, [say(f"the token is {TOKEN}")])
    server = InProcessServer(root, env={"EVE_API_TOKEN": TOKEN}, token=TOKEN).start()
    try:
        session = server.create("what is the token?")
        events = server.wait_for(session, count("session.waiting"))
    finally:
        server.stop()
    [reply] = [e["data"]["message"] for e in events if e["type"] == "message.completed"]
    assert reply == "the token is [redacted]"
    assert_nowhere_stored(root, TOKEN)  # the step's record and the session checkpoint too


LEAKY_TOOL = """
    import os
    from eve.tools import WorkflowContext, define_workflow_tool

    class ProviderError(Exception):
        '''Like an SDK's error: it holds the raw response, which quotes the key.'''

        def __init__(self, response):
            super().__init__(f"rejected: {response['echo']}")
            self.response = response

    async def relay(data, ctx: WorkflowContext):
        event = await ctx.wait_for_event("go")

        async def call_provider():
            key = os.environ["EVE_API_TOKEN"]  # the event's copy arrives redacted already
            raise ProviderError({"echo": key, "headers": {"x-api-key": key}, "event": event})

        try:
            await ctx.step("provider", call_provider)
        except Exception as error:
            return {"failed": str(error)}
        return {"failed": None}

    default = define_workflow_tool(description="Relay an event to a provider.", run=relay)
"""


def test_secrets_in_task_events_and_provider_errors_are_stored_nowhere(
    make_app: AppFactory, capfd: pytest.CaptureFixture[str]
) -> None:
    """A key in a task event's data and in an exception's attributes (a provider's response):
    DBOS's tables, eve's, the stream, the log, stdout and stderr hold only the redaction."""
    root = make_app(
        {
            "agent/agent.py": SCRIPTED_AGENT.replace("{limits}", "{'max_turns': 5}"),
            "agent/instructions.md": "Follow the script.\n",
            "agent/tools/relay.py": LEAKY_TOOL,
        },
        minimal=False,
    )
    script(root, [call("relay"), say("relayed")])
    server = InProcessServer(root, env={"EVE_API_TOKEN": TOKEN}, token=TOKEN).start()
    log = ""
    try:
        session = server.create("relay it")
        [task] = [
            e["data"]
            for e in server.wait_for(session, count("task.started"))
            if e["type"] == "task.started"
        ]
        sent = server.post(
            f"/session/{session}/tasks/{task['task_id']}/events",
            {"name": "go", "data": {"key": TOKEN}},
        )
        assert sent.status_code == 202, sent.text
        events = server.wait_for(session, count("session.waiting"))
        stream = server.get(f"/session/{session}/stream?follow=false").text
    finally:
        log = server.stop()
    [result] = [e["data"]["output"] for e in events if e["type"] == "action.result"]
    assert "rejected: [redacted]" in result
    out, err = capfd.readouterr()
    for where, text in (("stream", stream), ("log", log), ("stdout", out), ("stderr", err)):
        assert TOKEN not in text, where
    assert_nowhere_stored(root, TOKEN)


PROVIDER_AGENT = {
    "agent/agent.py": """
        from eve import define_agent
        default = define_agent(
            model="anthropic/claude-test",
            retries={"attempts": 2, "max_delay_seconds": 0.01},
        )
    """,
    "agent/tools/lookup.py": """
        from eve.tools import tool

        @tool
        def lookup(query: str) -> str:
            '''Look something up.'''
            return "nothing for " + query
    """,
}


def test_keys_in_tool_input_provider_errors_and_stream_errors_are_stored_nowhere(
    make_app: AppFactory, capfd: pytest.CaptureFixture[str]
) -> None:
    """The real ``anthropic`` SDK against the loopback server: the model calls a tool with the
    key in its input, then the provider answers 400 with the key quoted in its body, then a
    200 stream ends in an ``error`` event quoting it ("Errors" and "Streaming Messages",
    https://docs.anthropic.com/en/api/errors, /en/api/messages-streaming)."""
    key = "sk-ant-api03-" + "PLANTED" * 6
    quoted = {"type": "error", "error": {"type": "invalid_request_error", "message": f"bad {key}"}}
    stream_error = {"type": "error", "error": {"type": "api_error", "message": f"oops {key}"}}
    with ScriptedServer() as api:
        api.add(
            anthropic_sse(
                [
                    start(),
                    *tool_block(0, "t1", "lookup", json.dumps({"query": key})),
                    *end("tool_use"),
                ]
            ),
            anthropic_sse([start(), *text_block(0, "found nothing"), *end("end_turn")]),
            json_reply(400, quoted),
            *[sse_error(stream_error)] * 2,
        )
        env = {"ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL": api.url}
        root = make_app(PROVIDER_AGENT)
        server = InProcessServer(root, env=env).start()
        log = ""
        try:
            session = server.create("look it up")
            server.wait_for(session, count("turn.completed"))
            server.send(session, "again")
            server.send(session, "and again")
            events = server.wait_for(session, count("turn.failed", 2))
            stream = server.get(f"/session/{session}/stream?follow=false").text
        finally:
            log = server.stop()
    assert [e["type"] for e in events].count("action.result") == 1
    out, err = capfd.readouterr()
    for where, text in (("stream", stream), ("log", log), ("stdout", out), ("stderr", err)):
        assert key not in text and "PLANTEDPLANTED" not in text, where
    assert_nowhere_stored(root, key)
    assert_nowhere_stored(root, "PLANTEDPLANTED")


def sse_error(error: dict[str, Any]) -> Reply:
    """A 200 stream that starts and then reports an error event."""
    reply = anthropic_sse([start(), *text_block(0, "par")[:2]])
    reply.chunks.append(f"event: error\ndata: {json.dumps(error)}\n\n".encode())
    return reply
