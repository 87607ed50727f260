"""``/attach PATH`` in ``eve dev``: the file goes with the next message, then no more."""

from __future__ import annotations

from tests.cli.test_dev_cli import piped
from tests.conftest import AppFactory
from tests.test_attachments import PNG


def test_attach_sends_a_file_with_the_next_message(make_app: AppFactory) -> None:
    root = make_app()  # offline/test without tools: it says what it got
    (root / "photo.png").write_bytes(PNG)
    (root / "notes.md").write_text("# no")
    lines = "/attach notes.md\n/attach photo.png\nwhat is this?\nand now?\n/exit\n"
    out, err = piped(root, lines)
    assert f"what is this? (received 1 image: image/png, {len(PNG)} bytes)" in out
    assert "You said: and now?\n" in out  # the next message goes without it
    assert "eve: notes.md is text/markdown" in err
    assert f"eve: attached photo.png (image/png, {len(PNG)} bytes)" in err
