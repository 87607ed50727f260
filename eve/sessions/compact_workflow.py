"""The compaction someone asked for (``POST …/compact``): a workflow on the session's queue.

It runs between turns, like a reset: it loads the checkpoint, folds all but the newest
messages into a summary (``execution.compaction``, whatever the history's size), and saves
the checkpoint with the summary and its tokens. The summary is written in a recorded step,
so a crash while it runs writes it again and a finished one is never asked for twice.
"""

from __future__ import annotations

from collections.abc import Awaitable

import msgspec
from dbos import DBOS

from eve._usage import TokenUsage
from eve.context.active import EveContext
from eve.costs import Spend, price
from eve.events import CompactionFailedData, SessionCompactedData
from eve.execution.compaction import (
    COMPACTIONS,
    CompactionRecord,
    Compactor,
    Summarized,
    compaction_client,
    compaction_key,
    context_tokens,
    plan,
    policy_for,
    window_tokens,
)
from eve.execution.events import EventEmitter
from eve.manifest import Compaction
from eve.messages import model_view, summary_message
from eve.sessions.checkpoint_steps import Loaded, load_checkpoint, save_checkpoint
from eve.sessions.durable_steps import DurableRecorder
from eve.sessions.turn_workflow import TurnRuntime, current_runtime

COMPACT_WORKFLOW = "eve.compact"


def compact_workflow_id(session_id: str, turn: int) -> str:
    return f"{session_id}:compact-{turn}"


async def run_compaction(runtime: TurnRuntime, session_id: str) -> str:
    """Compact ``session_id`` now: ``compacted``, ``failed`` (the model failed; nothing
    changed) or ``nothing`` (too little history to fold)."""
    workflow_id = DBOS.workflow_id or f"{session_id}:compact"
    events = await runtime.events_of(session_id, workflow_id, loads=True, starts_place=True)
    emitter = EventEmitter(events, session_id=session_id)
    loaded = await load_checkpoint(runtime.store, session_id, events.progress)
    checkpoint = loaded.checkpoint
    setup = runtime.setup
    config = setup.agent.config
    compiled = config.context_window.tokens if config.context_window is not None else None
    tokens = window_tokens(
        setup.client.model_id, override=config.model_context_window_tokens, compiled=compiled
    )
    policy = policy_for(
        config.compaction or Compaction(), model_id=setup.client.model_id, window_tokens=tokens
    )
    assert policy is not None, "a compaction setting always makes a policy"
    view = model_view(checkpoint.messages)
    folded = plan(view, policy.keep_tokens)
    if folded is None:
        # said anyway, so whoever asked sees the compaction ran
        size = context_tokens(setup.agent.instructions, view)
        model = policy.config.model or setup.client.model_id
        nothing = SessionCompactedData(
            tokens_before=size,
            tokens_after=size,
            messages_folded=0,
            model=model,
            usage=TokenUsage(),
            reason="requested",
        )
        await emitter.emit(nothing)
        await events.flush()
        runtime.log.forget(session_id)
        return "nothing"

    async def emit(data: SessionCompactedData | CompactionFailedData) -> None:
        await emitter.emit(data)

    compactor = Compactor(
        policy=policy,
        client=lambda: compaction_client(policy.config, setup.client, app_root=setup.app_root),
        system=setup.agent.instructions,
        emit=emit,
        reason="requested",
    )

    def produce() -> Awaitable[CompactionRecord]:
        return compactor.run(view, folded)

    context = EveContext(session_id=session_id)
    context.restore(checkpoint.state)
    recorder = DurableRecorder(events, context, gate=runtime.gate)
    record = await recorder.record(compaction_key(None), produce, COMPACTIONS)
    await recorder.settled()  # the record before the checkpoint it made, as a turn's steps
    if isinstance(record, Summarized):
        await _save(runtime, session_id, loaded, record)
    await events.flush()
    runtime.log.forget(session_id)
    return "compacted" if isinstance(record, Summarized) else "failed"


async def _save(runtime: TurnRuntime, session_id: str, loaded: Loaded, record: Summarized) -> None:
    before = loaded.checkpoint
    summary = summary_message(record.summary, folded=record.folded, kept=record.kept)
    after = msgspec.structs.replace(
        before,
        messages=[*before.messages, summary],
        # the summary's tokens count toward the session, like a turn's
        spend=before.spend + Spend(usage=record.usage, cost=price(record.model, record.usage)),
    )
    await save_checkpoint(runtime.store, session_id, after, after=loaded)


@DBOS.workflow(name=COMPACT_WORKFLOW)
async def compact_workflow(session_id: str) -> str:
    # started by a request, in its context: failing_fast() is False inside a workflow
    outcome = await run_compaction(current_runtime(), session_id)
    await current_runtime().settle(session_id)
    return outcome
