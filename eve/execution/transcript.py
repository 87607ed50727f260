"""JSONL transcripts: one message per line, appended and flushed as each is recorded."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from eve.errors import TranscriptCorrupt, TranscriptWriteFailed
from eve.messages import Message

_decoder = msgspec.json.Decoder(Message)
_encoder = msgspec.json.Encoder()


def load_transcript(path: Path) -> list[Message]:
    """The messages in ``path``; a missing file is an empty history."""
    try:
        lines = path.read_bytes().splitlines()
    except FileNotFoundError:
        return []
    messages: list[Message] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            messages.append(_decoder.decode(line))
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            raise TranscriptCorrupt(
                f"{path}:{number}: not a transcript message ({error}); fix or remove the line",
                path=str(path),
                line=number,
            ) from error
    return messages


class TranscriptWriter:
    """Appends each message as one line and flushes it to disk before returning."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, message: Message) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("ab") as handle:
                handle.write(_encoder.encode(message) + b"\n")
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as error:
            raise TranscriptWriteFailed(
                f"could not append to the transcript {self.path}: {error.strerror or error}; "
                "the run was stopped so nothing goes unsaved",
                path=str(self.path),
            ) from error
