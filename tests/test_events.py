"""The event vocabulary: one Struct per type, a wire format that has not changed."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import get_args, get_type_hints

import msgspec
import pytest

from eve._usage import TokenUsage
from eve.events import (
    EVENT_CLASSES,
    EVENT_TYPES,
    Event,
    EventData,
    EventMeta,
    EventType,
    OtherEvent,
    QuestionRequest,
    ToolApprovalRequest,
    TurnCompleted,
    TurnCompletedData,
    decode_any_event,
    decode_event,
    event_class,
)
from eve.execution.events import EventEmitter

WIRE = Path(__file__).parent / "data" / "wire"
#: NDJSON streams recorded from `eve serve` before the vocabulary was typed
RECORDED = sorted(WIRE.glob("*.ndjson"))


def test_the_recorded_streams_cover_most_of_the_vocabulary() -> None:
    seen = {json.loads(line)["type"] for path in RECORDED for line in path.open()}
    # reasoning, retries and fallbacks need a provider, connection.failed an MCP server that is down
    # and authorization.required one that asks for OAuth (tests/connections/ produce them);
    # the rest a recorded stream of the server shows
    assert set(EVENT_TYPES) - seen == {
        "reasoning.appended",
        "model.retrying",
        "model.fallback",
        "connection.failed",
        "authorization.required",
    }


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name)
def test_a_recorded_stream_decodes_into_typed_events_and_encodes_back_unchanged(
    path: Path,
) -> None:
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        event = decode_event(line)
        assert isinstance(event, Event), f"{path.name}:{number}"
        assert json.loads(msgspec.json.encode(event)) == json.loads(line), f"{path.name}:{number}"


def test_the_type_literal_and_the_union_name_the_same_events_in_the_same_order() -> None:
    assert get_args(EventType) == EVENT_TYPES
    assert len(set(EVENT_TYPES)) == len(EVENT_TYPES)


@pytest.mark.parametrize("cls", EVENT_CLASSES, ids=lambda c: c.__name__)
def test_each_event_has_a_data_struct_of_its_own_named_after_it(cls: type[Event]) -> None:
    data = get_type_hints(cls)["data"]
    assert issubclass(data, EventData) and data.__name__ == cls.__name__ + "Data"
    assert cls.__doc__, f"{cls.__name__} needs a one-line docstring: docs/http-api.md shows it"


async def test_the_emitter_fills_in_the_session_and_the_envelope() -> None:
    seen: list[object] = []
    emitter = EventEmitter(seen.append, session_id="ses_1", start_index=7)
    usage = TokenUsage(input_tokens=3, output_tokens=1)
    event = await emitter.emit(
        TurnCompletedData(turn_id="turn_0", stop_reason="complete", usage=usage)
    )
    assert seen == [event] and isinstance(event, TurnCompleted) and event.type == "turn.completed"
    assert event.data.session_id == "ses_1" and event.meta.index == 7
    assert event_class(event.data) is TurnCompleted
    wire = json.loads(msgspec.json.encode(event))
    assert wire["data"] == {
        "session_id": "ses_1",
        "turn_id": "turn_0",
        "stop_reason": "complete",
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }  # unset optional fields (node_id, parent, step_index, attempt) are left out


def test_input_requests_are_a_union_by_kind() -> None:
    line = (WIRE / "composition-catalog-approval-reset.ndjson").read_text().splitlines()
    requests = [
        request
        for event in map(decode_event, line)
        if event.type == "input.requested"
        for request in event.data.requests  # type: ignore[union-attr]
    ]
    assert [type(r) for r in requests] == [QuestionRequest, ToolApprovalRequest]
    assert [r.kind for r in requests] == ["question", "tool-approval"]


def test_a_client_keeps_an_event_type_it_does_not_know_as_plain_data() -> None:
    meta = EventMeta(id="evt_1", at="2026-12-03T00:00:00+00:00", index=4)
    future = msgspec.json.encode({"type": "turn.dreamed", "data": {"x": 1}, "meta": meta})
    other = decode_any_event(future)
    assert other == OtherEvent(type="turn.dreamed", data={"x": 1}, meta=meta)
    with pytest.raises(msgspec.ValidationError):
        decode_event(future)  # the log and the loop accept only what they know
    broken = msgspec.json.encode({"type": "turn.completed", "data": {}, "meta": meta})
    with pytest.raises(msgspec.ValidationError, match="stop_reason"):
        decode_any_event(broken)  # a known type with bad data is an error, not "other"


HTTP_API = Path(__file__).parent.parent / "docs" / "http-api.md"


def _documented_events() -> dict[str, list[str]]:
    """``{type: [its own data fields]}`` from the event table of docs/http-api.md."""
    rows = re.findall(r"^\| `([a-z_.]+)` \| ([^|]*) \|", HTTP_API.read_text(), re.MULTILINE)
    return {kind: re.findall(r"`(\w+)`", fields) for kind, fields in rows if "." in kind}


def test_the_http_docs_event_table_is_the_vocabulary() -> None:
    """Each type in order, with the data fields its Struct adds to ``EventData``."""
    shared = set(EventData.__struct_fields__)
    own = {
        str(cls.__struct_config__.tag): [
            f for f in get_type_hints(cls)["data"].__struct_fields__ if f not in shared
        ]
        for cls in EVENT_CLASSES
    }
    documented = _documented_events()
    assert list(documented) == list(EVENT_TYPES)
    assert {kind: sorted(fields) for kind, fields in documented.items()} == {
        kind: sorted(fields) for kind, fields in own.items()
    }
