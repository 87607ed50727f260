"""The session API's bodies on the wire: field names and shapes as clients always saw them."""

from __future__ import annotations

import msgspec
import pytest

from eve.wire.answers import (
    Accepted,
    Health,
    Refusal,
    ScheduleQueued,
    TaskEventDelivered,
    decode_refusal,
    encode_answer,
)
from eve.wire.requests import CreateBody, FollowUpBody, InputResponse, TaskEventBody


def test_answers_have_ok_first_and_camel_case_names() -> None:
    assert encode_answer(Health()) == b'{"ok":true,"status":"ready"}'
    queued = Accepted(session_id="ses_1", status="accepted", turn_id="turn_0")
    assert encode_answer(queued) == (
        b'{"ok":true,"sessionId":"ses_1","status":"accepted","turnId":"turn_0"}'
    )
    # no turn, no turnId (not null)
    resolved = Accepted(session_id="ses_1", status="resolved")
    assert encode_answer(resolved) == b'{"ok":true,"sessionId":"ses_1","status":"resolved"}'
    delivered = TaskEventDelivered(session_id="ses_1", task_id="t")
    assert msgspec.json.decode(encode_answer(delivered)) == {
        "ok": True,
        "sessionId": "ses_1",
        "taskId": "t",
        "status": "delivered",
    }
    run = ScheduleQueued(name="digest", workflow_id="w")
    assert b'"workflowId":"w"' in encode_answer(run)


def test_a_refusal_is_ok_false_and_reads_back() -> None:
    body = encode_answer(Refusal(code="invalid_body", error="bad"), ok=False)
    assert body == b'{"ok":false,"code":"invalid_body","error":"bad"}'
    assert decode_refusal(body) == Refusal(code="invalid_body", error="bad")
    # what a proxy answers instead is read as its first characters
    assert decode_refusal(b"<html>bad gateway</html>") == Refusal(error="<html>bad gateway</html>")


def test_request_bodies_leave_out_what_the_client_did_not_set() -> None:
    assert msgspec.json.encode(CreateBody()) == b"{}"
    assert msgspec.json.encode(FollowUpBody(message="hi")) == b'{"message":"hi"}'
    answers = FollowUpBody(input_responses=[InputResponse(request_id="r", option_id="deny")])
    assert msgspec.json.encode(answers) == (
        b'{"inputResponses":[{"requestId":"r","optionId":"deny"}]}'
    )


def test_request_bodies_are_decoded_strictly() -> None:
    raw = b'{"inputResponses":[{"requestId":"r","optionId":"accept","values":{"n":2}}]}'
    body = msgspec.json.decode(raw, type=FollowUpBody)
    assert body.input_responses == [
        InputResponse(request_id="r", option_id="accept", values={"n": 2})
    ]
    assert body.turn_policy == "queue"
    with pytest.raises(msgspec.ValidationError, match="unknown field `mesage`"):
        msgspec.json.decode(b'{"mesage":"hi"}', type=CreateBody)
    with pytest.raises(msgspec.ValidationError, match="name"):
        msgspec.json.decode(b'{"data":1}', type=TaskEventBody)
    # an answer's unknown fields are ignored, as they always were
    loose = b'{"inputResponses":[{"requestId":"r","optionId":"deny","note":"x"}]}'
    decoded = msgspec.json.decode(loose, type=FollowUpBody).input_responses
    assert decoded == [InputResponse(request_id="r", option_id="deny")]
