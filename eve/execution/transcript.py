"""JSONL transcripts: one message per line, appended and flushed as each is recorded, and the
session's ``define_state`` values beside them (``<transcript>.state.json``), so that
``eve run --session FILE`` continues a conversation with the state it left."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec

from eve.errors import TranscriptCorrupt, TranscriptWriteFailed
from eve.messages import (
    AssistantMessage,
    Message,
    ToolCallPart,
    ToolResultMessage,
    tool_result,
)

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


def open_calls(messages: list[Message]) -> list[list[ToolCallPart]]:
    """Per response in ``messages``, its tool calls that have no result yet, in order."""
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolResultMessage)}
    groups = [
        [call for call in message.tool_calls if call.id not in answered]
        for message in messages
        if isinstance(message, AssistantMessage)
    ]
    return [group for group in groups if group]


def close_open_calls(path: Path, *, running: str, not_run: str) -> int:
    """Give each call of the transcript at ``path`` that has no result an error result, so
    that the conversation can go on (a model refuses a call left without its result).
    Calls run in order, so the first open call of a response is the one that was running
    (its result says ``running``) and the others had not started (``not_run``). The
    number closed."""
    writer = TranscriptWriter(path)
    closed = 0
    for calls in open_calls(load_transcript(path)):
        for position, call in enumerate(calls):
            reason = running if position == 0 else not_run
            writer.append(tool_result(call.id, reason, name=call.name, is_error=True))
            closed += 1
    return closed


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
