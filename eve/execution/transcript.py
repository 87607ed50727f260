"""JSONL transcripts: one message per line, appended and flushed as each is recorded, and the
session's ``define_state`` values beside them (``<transcript>.state.json``), so that
``eve run --session FILE`` continues a conversation with the state it left."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

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


def state_path(transcript: Path) -> Path:
    """Where the state of the session ``transcript`` holds is kept: ``chat.jsonl`` →
    ``chat.jsonl.state.json`` (a file of its own, so the transcript stays messages only)."""
    return transcript.with_name(transcript.name + ".state.json")


def load_state(path: Path) -> dict[str, Any]:
    """The encoded ``define_state`` values saved at ``path``; none when it is missing."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}
    try:
        state = msgspec.json.decode(data, type=dict[str, Any])
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise TranscriptCorrupt(
            f"{path}: not the session's saved state ({error}); fix or remove the file",
            path=str(path),
            line=1,
        ) from error
    return state


def save_state(path: Path, state: dict[str, Any]) -> None:
    """Replace the saved state with ``state``, whole or not at all (written beside, then
    renamed over it)."""
    partial = path.with_name(path.name + ".partial")
    try:
        partial.write_bytes(_encoder.encode(state) + b"\n")
        os.replace(partial, path)
    except OSError as error:
        raise TranscriptWriteFailed(
            f"could not save the session state {path}: {error.strerror or error}",
            path=str(path),
        ) from error
