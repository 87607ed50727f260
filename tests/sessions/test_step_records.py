"""A durable step's record names its format; one of another format is refused by name."""

from __future__ import annotations

import msgspec
import pytest

from eve._usage import TokenUsage
from eve.errors import StepRecordCorrupt
from eve.execution.checkpoints import PARTS, RanAll
from eve.execution.response import ModelResponse
from eve.sessions.checkpoint import STEP_RECORD_VERSION, StepCheckpoint
from eve.sessions.durable_steps import decode_step_record


def _record(version: int | None) -> bytes:
    response = ModelResponse(finish_reason="end_turn", usage=TokenUsage())
    part = msgspec.json.encode(RanAll(response=response))
    fields = {"value": msgspec.Raw(part), "state": {}}
    record = StepCheckpoint(**fields, version=version) if version else StepCheckpoint(**fields)
    return msgspec.json.encode(record)


def test_a_record_of_this_format_reads_back() -> None:
    checkpoint, part = decode_step_record(
        _record(STEP_RECORD_VERSION), PARTS.decoder, workflow_id="ses_1:turn-0", step="step:0"
    )
    assert isinstance(part, RanAll) and checkpoint.version == STEP_RECORD_VERSION


def test_a_record_an_older_eve_wrote_is_refused_with_the_named_error() -> None:
    # an older eve's record has no format (1): its parts ask one call at a time and hold
    # the session's once() approvals, which the turn's state now holds
    legacy = b'{"value":{"stop":"ran-all"},"state":{},"approved_once":[],"attempt":0}'
    for record in (_record(None), legacy):
        with pytest.raises(StepRecordCorrupt) as refused:
            decode_step_record(record, PARTS.decoder, workflow_id="ses_1:turn-0", step="step:0")
        assert (refused.value.workflow_id, refused.value.step) == ("ses_1:turn-0", "step:0")
        assert f"format 1; this eve reads {STEP_RECORD_VERSION}" in str(refused.value)
        assert "reset the session" in str(refused.value)
