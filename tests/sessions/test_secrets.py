"""No secret in a response, the event log or the database files."""

from __future__ import annotations

import base64
import binascii
import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import AppFactory
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
        with contextlib.closing(sqlite3.connect(path)) as db:
            tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            for table in tables:
                for row in db.execute(f'SELECT * FROM "{table}"'):
                    for cell in row:
                        if isinstance(cell, str | bytes):
                            raw = cell.encode() if isinstance(cell, str) else cell
                            yield raw
                            with contextlib.suppress(binascii.Error, ValueError):
                                yield base64.b64decode(raw, validate=True)


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
