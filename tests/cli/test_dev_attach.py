"""``/attach PATH`` in ``eve dev``: the file goes with the next message, then no more."""

from __future__ import annotations

from tests.cli.test_dev_cli import read_until, send, start
from tests.conftest import AppFactory
from tests.test_attachments import PNG


def test_attach_sends_a_file_with_the_next_message(make_app: AppFactory) -> None:
    root = make_app()  # offline/test without tools: it says what it got
    (root / "photo.png").write_bytes(PNG)
    (root / "notes.md").write_text("# no")
    process = start(root)
    try:
        read_until(process, "you › ")
        send(process, "/attach notes.md")
        read_until(process, "you › ")
        send(process, "/attach photo.png")
        read_until(process, "you › ")
        send(process, "what is this?")
        first = read_until(process, "you › ")
        assert f"what is this? (received 1 image: image/png, {len(PNG)} bytes)" in first
        send(process, "and now?")
        assert "You said: and now?\n" in read_until(process, "you › ")
        send(process, "/exit")
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert "eve: notes.md is text/markdown" in err
    assert f"eve: attached photo.png (image/png, {len(PNG)} bytes)" in err
