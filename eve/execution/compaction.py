"""Compaction: fold older history into a summary once a request nears the context window.

Before each model request the loop measures the context it would send (``context_tokens``).
At ``compaction.threshold_percent`` of the model's window, the oldest whole units of the
history (a message, or an assistant message with the results of its calls: never split) are
summarized by the compaction model, and a summary message (``messages.summary_message``) is
appended; from then on the model reads the summary, the messages it kept and what follows
(``messages.model_view``), while the history and transcript keep everything.

A compaction is a recorded part of its own (``StepRecorder.compaction``): under durable
sessions a crash while it runs runs it again, a finished one is replayed from its record
(the model is not asked twice), and the summary is in the checkpoint. When the summary
cannot be written (the compaction model fails), the request is trimmed instead and
``session.compaction_failed`` says so; a model with no known window is trimmed as before, and
the ``eve.compaction`` logger says so once per model.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec

from eve._model_windows import window_for
from eve._redact import redact
from eve._usage import TokenUsage
from eve.events import CompactionFailedData, CompactionReason, SessionCompactedData
from eve.execution.model_stream import stream_response
from eve.execution.recording import RecordKind
from eve.execution.trim import estimate_tokens, units
from eve.manifest import Compaction
from eve.messages import (
    Message,
    ToolResultMessage,
    UserMessage,
    model_view,
    plain_transcript,
    summary_message,
    user_message,
)
from eve.models.base import ModelClient, ModelRequest

log = logging.getLogger("eve.compaction")

#: eve's summary prompt; ``compaction.instructions`` replaces it
INSTRUCTIONS = """\
You are compacting the history of a conversation between a user and an AI agent that uses \
tools, so that the agent can go on without the older messages. Write a summary the agent \
will read instead of them. Keep: what the user asked for and still wants, decisions made \
and why, facts learned from tool results (names, numbers, ids, paths), what was done and \
what is left to do, and anything the user said to remember. Drop greetings, repetition and \
raw tool output that no longer matters. Write plain prose and short lists, in the \
conversation's language, with no preamble."""

#: the share of the threshold the kept recent messages may fill: the rest is left for the
#: summary and the turns after it, so compaction does not run again at once
KEEP_SHARE = 0.25
#: how long a summary may be (tokens), whatever the model's output limit
SUMMARY_MAX_TOKENS = 4096
#: the fewest tokens a summary is asked for, however small the window
MIN_SUMMARY_TOKENS = 64


class Summarized(msgspec.Struct, frozen=True, kw_only=True, tag_field="outcome", tag="summarized"):
    """A summary was written: it stands for the first ``folded`` messages the model was
    sent, and the last ``kept`` of them stay as they are."""

    summary: str
    folded: int
    kept: int
    tokens_before: int
    tokens_after: int
    model: str
    usage: TokenUsage


class SummaryFailed(msgspec.Struct, frozen=True, kw_only=True, tag_field="outcome", tag="failed"):
    """The compaction model failed; the request is trimmed instead."""

    error: str


CompactionRecord = Summarized | SummaryFailed
COMPACTIONS: RecordKind[CompactionRecord] = RecordKind(CompactionRecord, "a compaction")
#: produces a compaction's record (what ``StepRecorder.record`` runs for one)
ProduceCompaction = Callable[[], Awaitable[CompactionRecord]]


def compaction_key(step: int | None) -> str:
    """A compaction's part name: ``compact:3`` before step 3 of a turn; ``compact`` for one
    asked for between turns."""
    return "compact" if step is None else f"compact:{step}"


def context_tokens(system: str, messages: Sequence[Message]) -> int:
    """The estimated tokens of a request's context (``trim.estimate_tokens``' estimate)."""
    return len(system) // 4 + sum(estimate_tokens(m) for m in messages)


@dataclass(frozen=True, kw_only=True)
class Policy:
    """When a node compacts, and with what."""

    config: Compaction
    #: the context tokens at which it compacts; None for a model with no known window
    threshold_tokens: int | None
    #: the window the threshold is a share of
    window_tokens: int | None = None

    @property
    def keep_tokens(self) -> int:
        return int((self.threshold_tokens or 0) * KEEP_SHARE)

    def summary_tokens(self, request_tokens: int) -> int:
        """How long the summary of ``request_tokens`` may be: ``SUMMARY_MAX_TOKENS``, no more
        than the kept messages' share of the threshold (a longer summary brings the context
        straight back to it: SmolLM2-135M on a 2,048-token window, asked for 4,096 tokens,
        wrote 1,500 in place of 317 and filled the window), nor the room the window leaves
        after the request (a server may refuse prompt + max_tokens over its window)."""
        bounds = [SUMMARY_MAX_TOKENS]
        if self.threshold_tokens is not None:
            bounds.append(max(self.keep_tokens, MIN_SUMMARY_TOKENS))
        if self.window_tokens is not None:
            bounds.append(max(self.window_tokens - request_tokens, MIN_SUMMARY_TOKENS))
        return min(bounds)

    @property
    def instructions(self) -> str:
        return self.config.instructions or INSTRUCTIONS


_warned: set[str] = set()


def warn_unknown_window(model_id: str) -> None:
    """Say once per model that compaction cannot measure against ``model_id``."""
    if model_id not in _warned:
        _warned.add(model_id)
        log.warning(
            "%s has no known context window: compaction falls back to trimming; set "
            "model_context_window_tokens in define_agent to compact",
            model_id,
        )


def policy_for(
    config: Compaction | None, *, model_id: str, window_tokens: int | None
) -> Policy | None:
    """The node's policy; None without ``compaction``. A model with no known window gets a
    policy that never compacts, and the ``eve.compaction`` logger warns once per model."""
    if config is None:
        return None
    if window_tokens is None:
        warn_unknown_window(model_id)
        return Policy(config=config, threshold_tokens=None)
    threshold = window_tokens * config.threshold_percent // 100
    return Policy(config=config, threshold_tokens=threshold, window_tokens=window_tokens)


def window_tokens(model_id: str, *, override: int | None, compiled: int | None) -> int | None:
    """The window a node measures against: ``model_context_window_tokens``, else eve's table
    for the model that runs (it may not be the configured one: ``eve run --model``, a
    fallback), else ``compiled``: the window compiled for the configured model (a plugin's
    model the runtime table does not know), which the caller passes only when that model
    is the one that runs."""
    window = window_for(model_id, override)
    return window.tokens if window is not None else compiled


def plan(view: Sequence[Message], keep_tokens: int) -> int | None:
    """How many of the messages the model is sent to fold: the oldest whole units, leaving
    the newest that fit ``keep_tokens`` (always the newest one). None when nothing would be
    folded but a previous summary (nothing gained)."""
    grouped = units(view)
    kept_units = 0
    used = 0
    for unit in reversed(grouped):
        cost = sum(estimate_tokens(m) for m in unit)
        if kept_units and used + cost > keep_tokens:
            break
        kept_units += 1
        used += cost
    kept = sum(len(unit) for unit in grouped[len(grouped) - kept_units :])
    # the kept messages must follow the last summary in the history (``model_view`` reads
    # them as the messages right before the new one), so a previous summary and what it
    # kept are always folded
    last = _after_summary(view)
    kept = min(kept, last)
    while kept and isinstance(view[len(view) - kept], ToolResultMessage):
        kept -= 1
    folded = len(view) - kept
    first = view[0] if view else None
    only_summary = folded == 1 and isinstance(first, UserMessage) and first.compaction is not None
    return None if folded == 0 or only_summary else folded


def _after_summary(view: Sequence[Message]) -> int:
    first = view[0] if view else None
    if isinstance(first, UserMessage) and first.compaction is not None:
        return len(view) - 1 - first.compaction.kept
    return len(view)


async def summarize(
    client: ModelClient, instructions: str, messages: Sequence[Message], *, max_tokens: int
) -> tuple[str, TokenUsage]:
    """Ask ``client`` for the summary of ``messages``; its text and what it cost."""
    request = ModelRequest(
        system=instructions,
        messages=[user_message(plain_transcript(messages))],
        max_output_tokens=max_tokens,
        purpose="compaction",
    )
    # tool calls are ignored: no tools are offered
    response = await stream_response(client, request, step=None)
    summary = response.text.strip()
    if not summary:
        raise ValueError(f"{client.model_id} wrote an empty summary")
    return summary, response.usage


@dataclass(frozen=True, kw_only=True)
class Compactor:
    """Writes one compaction's record, publishing its event (inside the recorded part)."""

    policy: Policy
    #: builds the compaction model's client (building it can fail too: a missing script)
    client: Callable[[], ModelClient]
    system: str
    emit: Callable[[SessionCompactedData | CompactionFailedData], Awaitable[None]]
    reason: CompactionReason = "threshold"

    async def run(self, view: Sequence[Message], folded: int) -> CompactionRecord:
        before = context_tokens(self.system, view)
        try:
            client = self.client()
            # the request is the folded messages as one transcript: about their tokens
            request = context_tokens(self.policy.instructions, view[:folded])
            limit = self.policy.summary_tokens(request)
            summary, usage = await summarize(
                client, self.policy.instructions, view[:folded], max_tokens=limit
            )
        except Exception as error:
            # any failure of the model: the turn goes on, trimmed, and the warning says why
            failed = SummaryFailed(error=redact(f"{type(error).__name__}: {error}"))
            await self.emit(CompactionFailedData(error=failed.error, fallback="trim"))
            return failed
        kept = len(view) - folded
        after_view = [summary_message(summary, folded=folded, kept=kept), *view[folded:]]
        record = Summarized(
            summary=summary,
            folded=folded,
            kept=kept,
            tokens_before=before,
            tokens_after=context_tokens(self.system, after_view),
            model=client.model_id,
            usage=usage,
        )
        await self.emit(
            SessionCompactedData(
                tokens_before=record.tokens_before,
                tokens_after=record.tokens_after,
                messages_folded=folded,
                model=record.model,
                usage=usage,
                reason=self.reason,
            )
        )
        return record


def compaction_client(
    config: Compaction, agent_client: ModelClient, *, app_root: Path
) -> ModelClient:
    """The model that summarizes: ``compaction.model``, else the agent's own."""
    if config.model is None or config.model == agent_client.model_id:
        return agent_client
    from eve.models.registry import create_client  # providers load on demand

    return create_client(config.model, app_root=app_root, env=os.environ)


def needs_compaction(policy: Policy | None, system: str, history: Sequence[Message]) -> bool:
    """Whether the request ``history`` makes reaches the policy's threshold."""
    if policy is None or policy.threshold_tokens is None:
        return False
    return context_tokens(system, model_view(history)) >= policy.threshold_tokens
