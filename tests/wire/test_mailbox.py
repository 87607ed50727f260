"""The workflow mailbox's messages: what the service sends, and what an older eve left."""

from __future__ import annotations

import pytest

from eve.auth.principal import PrincipalRef
from eve.errors import MailboxMessageInvalid
from eve.wire.mailbox import (
    AnswerMail,
    CancelMail,
    EventMail,
    MailboxMessage,
    mail_data,
    read_mail,
)

OPERATOR = PrincipalRef(id="operator", kind="operator")


@pytest.mark.parametrize(
    "message",
    [
        AnswerMail(request_id="inp_1", option_id="approve", responder=OPERATOR),
        AnswerMail(request_id="inp_1", option_id="deny"),
        EventMail(name="paid", data={"amount": 3}),
        CancelMail(),
    ],
)
def test_a_message_travels_as_plain_data_and_reads_back(message: MailboxMessage) -> None:
    data = mail_data(message)
    assert type(data) is dict and data["kind"] in ("answer", "event", "cancel")
    assert read_mail(data) == message


def test_the_data_names_its_fields_as_the_older_messages_did() -> None:
    answer = AnswerMail(request_id="inp_1", option_id="approve", responder=OPERATOR)
    assert mail_data(answer) == {
        "kind": "answer",
        "request_id": "inp_1",
        "option_id": "approve",
        "responder": {"id": "operator", "kind": "operator"},
    }
    assert mail_data(EventMail(name="paid")) == {"kind": "event", "name": "paid", "data": None}


@pytest.mark.parametrize(
    ("older", "read"),
    [
        ({"cancel": True}, CancelMail()),
        ({"event": "paid", "data": [1, 2]}, EventMail(name="paid", data=[1, 2])),
        (
            {
                "request_id": "inp_1",
                "option_id": "approve",
                "responder": {"id": "u", "kind": "user"},
            },
            AnswerMail(
                request_id="inp_1", option_id="approve", responder=PrincipalRef(id="u", kind="user")
            ),
        ),
        # from before answers named who gave them
        (
            {"request_id": "inp_1", "option_id": "deny"},
            AnswerMail(request_id="inp_1", option_id="deny"),
        ),
    ],
)
def test_an_older_eves_untagged_message_is_still_read(
    older: dict[str, object], read: MailboxMessage
) -> None:
    assert read_mail(older) == read


@pytest.mark.parametrize(
    "raw",
    [
        "approve",
        None,
        {"hello": "world"},
        {"kind": "shout", "text": "hi"},
        {"kind": "answer", "request_id": "inp_1"},
        {"request_id": 7, "option_id": "approve"},
    ],
)
def test_a_message_no_eve_sent_is_refused_with_a_named_error(raw: object) -> None:
    with pytest.raises(MailboxMessageInvalid, match="cannot read") as refused:
        read_mail(raw)
    assert refused.value.detail and refused.value.code == "mailbox_message_invalid"
