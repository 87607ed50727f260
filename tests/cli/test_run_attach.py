"""``eve run --attach``: files sent with the prompt, the event that says so, the refusals."""

from __future__ import annotations

import json

from eve.execution import load_transcript
from eve.messages import DocumentPart, ImagePart, UserMessage
from tests.cli.test_run_cli import eve_run
from tests.conftest import AppFactory
from tests.test_attachments import PNG


def test_attachments_reach_the_model_and_the_transcript(make_app: AppFactory) -> None:
    root = make_app()  # offline/test, no tools: it answers at once
    (root / "photo.png").write_bytes(PNG)
    (root / "notes.txt").write_text("aisle 4")
    args = ["what is this?", "--attach", "photo.png", "--attach", "notes.txt"]
    done = eve_run(root, *args, "--session", "s.jsonl")
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "(offline/test) You said: what is this? (received 1 image and 1 document: "
        f"image/png, {len(PNG)} bytes; notes.txt, text/plain, 7 bytes)\n"
    )
    [user, _] = load_transcript(root / "s.jsonl")
    assert isinstance(user, UserMessage) and user.text == "what is this?"
    assert user.parts[1:] == [
        ImagePart(media_type="image/png", data=PNG),
        DocumentPart(media_type="text/plain", data=b"aisle 4", name="notes.txt"),
    ]
    events = eve_run(root, "again", "--attach", "photo.png", "--json")
    [received] = [
        json.loads(line) for line in events.stdout.splitlines() if "message.received" in line
    ]
    assert received["data"]["message"] == "again"
    assert received["data"]["attachments"] == [
        {"type": "image", "media_type": "image/png", "size": len(PNG)}
    ]
    assert "data" not in json.dumps(received["data"]["attachments"])  # never the bytes


def test_a_file_no_model_takes_or_too_large_stops_the_run(make_app: AppFactory) -> None:
    root = make_app()
    (root / "notes.md").write_text("# hi")
    (root / "huge.png").write_bytes(b"\0" * 5_000_001)
    refused = eve_run(root, "read this", "--attach", "notes.md")
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.strip().splitlines()[-1] == (
        "eve: notes.md is text/markdown; models take image/png, image/jpeg, image/gif, "
        "image/webp, application/pdf, text/plain (name the file .png, .jpg, .gif, .webp, "
        ".pdf or .txt)"
    )
    too_large = eve_run(root, "look", "--attach", "huge.png")
    assert too_large.returncode == 1
    assert "eve: huge.png has 5000001 bytes; the limit is 5000000" in too_large.stderr
    missing = eve_run(root, "look", "--attach", "nope.png")
    assert missing.returncode == 2 and "does not exist" in missing.stderr  # click's usage error
