"""Message parts over HTTP and through ``eve.client``: accepted, acknowledged, refused."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from eve.client import AsyncEveClient, EveClient
from eve.errors import AttachmentUnsupported
from eve.messages import ImagePart
from tests.conftest import MINIMAL, write_files
from tests.sessions.harness import Event, count
from tests.sessions.inprocess import InProcessServer
from tests.test_attachments import PNG

KEY = "sk-ant-" + "k3y" * 8


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessServer]:
    root = tmp_path_factory.mktemp("attach")
    write_files(root, MINIMAL)  # offline/test with no tools: every turn is one reply
    running = InProcessServer(root).start()
    yield running
    running.stop()


def image(data: bytes = PNG, media_type: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "media_type": media_type, "data": base64.b64encode(data).decode()}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def error_of(response: httpx.Response) -> tuple[int, str]:
    body = response.json()
    assert body["ok"] is False and body["error"], body
    return response.status_code, body["code"]


def send(server: InProcessServer, session: str, message: list[dict[str, Any]]) -> httpx.Response:
    return server.post(f"/session/{session}", {"message": message})


def turns(server: InProcessServer, session: str, n: int) -> list[Event]:
    return server.wait_for(session, count("session.waiting", n))


def of_type(events: list[Event], kind: str) -> list[dict[str, Any]]:
    return [e["data"] for e in events if e["type"] == kind]


def test_parts_are_a_turn_the_model_sees_and_the_log_describes(server: InProcessServer) -> None:
    created = server.post("/session", {"message": [text("what is this?"), image()]})
    assert created.status_code == 202, created.text
    session = created.json()["sessionId"]
    pdf = {"type": "document", "media_type": "application/pdf", "url": "https://x.test/a.pdf"}
    secret = {
        "type": "document",
        "media_type": "text/plain",
        "data": base64.b64encode(f"the key is {KEY}".encode()).decode(),
        "name": "key.txt",
    }
    sent = send(server, session, [text(f"and these, {KEY}"), pdf, secret])
    assert sent.status_code == 202 and sent.json()["turnId"] == "turn_1", sent.text
    events = turns(server, session, 2)
    first, second = of_type(events, "message.received")
    assert first["message"] == "what is this?"
    assert first["attachments"] == [{"type": "image", "media_type": "image/png", "size": len(PNG)}]
    # secrets are redacted where the message comes in: the log, the model and DBOS's input
    assert second["message"] == "and these, [redacted]"
    assert second["attachments"] == [
        {"type": "document", "media_type": "application/pdf", "url": "https://x.test/a.pdf"},
        # "the key is [redacted]": a plain-text document is redacted like the text
        {"type": "document", "media_type": "text/plain", "name": "key.txt", "size": 21},
    ]
    replies = [m["message"] for m in of_type(events, "message.completed")]
    assert replies == [
        f"(offline/test) You said: what is this? (received 1 image: image/png, {len(PNG)} bytes)",
        "(offline/test) You said: and these, [redacted] (received 2 documents: application/pdf, "
        "at https://x.test/a.pdf; key.txt, text/plain, 21 bytes)",
    ]
    assert KEY not in str(events)


def test_bad_parts_are_400_with_their_path(server: InProcessServer) -> None:
    session = server.create()
    cases = {
        "invalid_part": [
            [],
            [{"type": "tool-call", "id": "c", "name": "n", "input": {}}],
            [{"type": "image", "data": "iVBO"}],  # no media_type
            [text("hi"), {"type": "image", "media_type": "image/png", "data": "not base64!"}],
            [{"type": "image", "media_type": "image/png"}],  # neither data nor url
        ],
        "attachment_unsupported": [
            [image(media_type="image/tiff")],
            [{"type": "document", "media_type": "text/markdown", "data": "aGk="}],
            [{"type": "image", "media_type": "image/png", "url": "file:///etc/passwd"}],
        ],
    }
    for code, bodies in cases.items():
        for message in bodies:
            answered = send(server, session, message)
            assert error_of(answered) == (400, code), message
    bad = server.send(
        session, [text("hi"), {"type": "image", "media_type": "image/png", "data": "@"}]
    )
    assert "$.message[1].data" in bad.json()["error"]
    assert error_of(server.post("/session", {"message": 7})) == (400, "invalid_body")
    assert server.events(session)[-1]["type"] == "session.started"  # no turn was queued


def test_oversized_parts_and_totals_are_413(server: InProcessServer) -> None:
    one = server.post("/session", {"message": [image(b"\0" * 5_000_001)]})
    assert error_of(one) == (413, "attachment_too_large")
    assert "has 5000001 bytes; the limit is 5000000" in one.json()["error"]
    three = server.post("/session", {"message": [image(b"\0" * 3_400_000)] * 3})
    assert error_of(three) == (413, "attachment_too_large")
    assert "together has 10200000 bytes; the limit is 10000000" in three.json()["error"]


def test_the_clients_send_files_and_parts(server: InProcessServer, tmp_path: Path) -> None:
    (tmp_path / "photo.png").write_bytes(PNG)
    (tmp_path / "notes.md").write_text("# no")
    with EveClient(server.url, transport=server.transport()) as client:
        created = client.create("look", attachments=[tmp_path / "photo.png"])
        with pytest.raises(AttachmentUnsupported, match="text/markdown"):
            client.send(created.session_id, "and this", attachments=[tmp_path / "notes.md"])

    async def send_async() -> str | None:
        async with AsyncEveClient(server.url, transport=server.async_transport()) as client:
            part = ImagePart(media_type="image/gif", data=b"GIF89a")
            return (await client.send(created.session_id, "", attachments=[part])).turn_id

    assert asyncio.run(send_async()) == "turn_1"
    events = turns(server, created.session_id, 2)
    received = of_type(events, "message.received")
    assert [r.get("attachments") for r in received] == [
        [{"type": "image", "media_type": "image/png", "size": len(PNG)}],
        [{"type": "image", "media_type": "image/gif", "size": 6}],
    ]
    assert received[1]["message"] == ""
