"""The ai_sdk channel, through the ``ai`` package's own chat transport and UI message reader
(``readUIMessageStream``) in Node, against a real uvicorn on loopback: every chunk is
validated by the package's schemas and every message built by its state machine."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.channels.ai_sdk.harness import (
    CHANNEL,
    JS,
    TOKEN,
    ChatServer,
    finish,
    make_root,
    node_client,
    run_client,
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatServer]:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not installed: the ai package's client cannot run")
    if not (JS / "node_modules" / "ai").is_dir():
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund"], cwd=JS, check=True, capture_output=True
        )
    running = ChatServer(make_root(tmp_path_factory.mktemp("ai_sdk"))).start()
    try:
        yield running
    finally:
        running.stop()


def types(result: dict[str, Any]) -> list[str]:
    """The chunks' types, but for the eve events beyond the vocabulary (``eve_types``)."""
    return [chunk["type"] for chunk in result["chunks"] if chunk["type"] != "data-eve"]


def eve_types(result: dict[str, Any]) -> list[str]:
    return [c["data"]["type"] for c in result["chunks"] if c["type"] == "data-eve"]


def parts(result: dict[str, Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = result["message"]["parts"]
    return parts


def wait_for(path: Path) -> None:
    """Until a tool writes ``path`` (the turn reached it); polled, as files give no event."""
    for _ in range(1500):
        if path.exists():
            return
        time.sleep(0.02)
    raise AssertionError(f"{path.name} never appeared")


def test_a_plain_answer(server: ChatServer) -> None:
    [result] = run_client(server, [{"op": "send", "text": "hello there"}], chat="plain")
    assert types(result) == [
        "start", "start-step", "text-start", "text-delta", "text-delta", "text-delta",
        "text-end", "finish-step", "finish",
    ]  # fmt: skip
    message = result["message"]
    assert message["role"] == "assistant"
    assert message["id"] == f"{message['metadata']['sessionId']}:turn_0"
    texts = [p["text"] for p in parts(result) if p["type"] == "text"]
    assert texts == ["you said: hello there"]
    assert result["chunks"][-1]["finishReason"] == "stop"
    # the rest of the turn's events, transient: the message keeps none of them
    assert eve_types(result) == ["turn.started", "message.received"]
    assert all(c["transient"] for c in result["chunks"] if c["type"] == "data-eve")
