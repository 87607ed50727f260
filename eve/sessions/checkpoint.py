"""A session's checkpoint: everything the next turn starts from, stored as JSON."""

from __future__ import annotations

from typing import Any

import msgspec

from eve._redact import redact
from eve._usage import TokenUsage
from eve.costs import Spend
from eve.events import SessionEvent
from eve.messages import Message


class SessionCheckpoint(msgspec.Struct, kw_only=True, omit_defaults=True):
    """History, per-session state and the token totals, as of the last finished turn."""

    messages: list[Message] = []
    #: ``EveContext.snapshot()``: codec-bearing context keys (``define_state`` slots)
    state: dict[str, Any] = {}
    #: tools approved under ``once()`` in this session
    approved_once: list[str] = []
    turns: int = 0
    #: the session's tokens by kind and their cost, its subagents' included (eve.costs):
    #: the one count the limits, ``GET /session/{id}`` and the totals read
    spend: Spend = Spend()
    #: how many times a person raised each session limit (``execution.limits``)
    raised_limits: dict[str, int] = {}
    #: a checkpoint from before ``spend``: its token counters, folded into ``spend`` on decode
    legacy_input_tokens: int | None = msgspec.field(default=None, name="input_tokens")
    legacy_output_tokens: int | None = msgspec.field(default=None, name="output_tokens")

    def __post_init__(self) -> None:
        if self.legacy_input_tokens is None and self.legacy_output_tokens is None:
            return
        if self.spend == Spend():
            usage = TokenUsage(
                input_tokens=self.legacy_input_tokens or 0,
                output_tokens=self.legacy_output_tokens or 0,
            )
            self.spend = Spend(usage=usage)
        self.legacy_input_tokens = self.legacy_output_tokens = None


#: the format of a durable step's record; a record of another is refused
#: (``StepRecordCorrupt``). 2: the turn as a state machine (parts ask several calls at once
#: and stop before concurrent batches; ``once()`` approvals are the turn's state, not the
#: record's)
STEP_RECORD_VERSION = 2


class StepCheckpoint(msgspec.Struct, frozen=True, kw_only=True):
    """What a durable step records beside its value: the state after it ran, and its events.

    The events are recorded so the event log need not be written before the step is: a
    recovered turn appends whichever of them never reached the log (see ``TurnEvents``).
    """

    value: msgspec.Raw
    state: dict[str, Any]
    #: the record's format (``STEP_RECORD_VERSION``); a record without one is of format 1
    version: int = 1
    attempt: int = 0
    events: list[SessionEvent] = []
    #: the tree the session's workspace held after the step (``sessions.workspaces``);
    #: None without a sandbox
    workspace: str | None = None


_encoder = msgspec.json.Encoder()


def encode_checkpoint(checkpoint: SessionCheckpoint) -> str:
    """The checkpoint as stored: with every known secret redacted, as the event log is."""
    return redact(_encoder.encode(checkpoint).decode())


def decode_checkpoint(data: str | None) -> SessionCheckpoint:
    return SessionCheckpoint() if not data else msgspec.json.decode(data, type=SessionCheckpoint)
