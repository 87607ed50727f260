"""A durable workflow's mailbox: what the session service sends a parked turn or task.

One DBOS topic (``input``) carries three kinds of message, a tagged union on ``kind``:
an answer to an input request, an event for a workflow tool waiting in
``wait_for_event``, and a cancel. They travel as plain data (``mail_data``), never as a
pickled Struct: DBOS pickles messages, and a pickled class would stop loading the day it
moves. ``read_mail`` turns what ``recv`` returned back into a message; an eve from before
this module sent untagged dicts (``{"cancel": true}``, ``{"request_id", "option_id",
"responder"}``, ``{"event", "data"}``), and a workflow parked across the upgrade may still
find one waiting, so those are read too. Anything else is ``MailboxMessageInvalid``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from eve.auth.principal import PrincipalRef
from eve.errors import MailboxMessageInvalid

#: the one topic of a workflow's messages
MAILBOX_TOPIC = "input"


class Mail(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind"):
    """What every mailbox message is."""


class AnswerMail(Mail, frozen=True, kw_only=True, tag="answer"):
    """A person's answer to an input request the workflow waits on."""

    request_id: str
    option_id: str
    #: who chose it; None in an answer an eve from before responders sent
    responder: PrincipalRef | None = None


class EventMail(Mail, frozen=True, kw_only=True, tag="event"):
    """An event for a workflow tool's ``wait_for_event(name)``."""

    name: str
    #: JSON data, redacted before it was sent
    data: Any = None


class CancelMail(Mail, frozen=True, kw_only=True, tag="cancel"):
    """The turn was cancelled: whatever waits stops."""


MailboxMessage = AnswerMail | EventMail | CancelMail
#: what a waiting body may ask for (a cancel is never waited for: it ends every wait)
Deliverable = AnswerMail | EventMail


def mail_data(message: MailboxMessage) -> dict[str, Any]:
    """``message`` as DBOS stores it: plain data with its ``kind``."""
    data: dict[str, Any] = msgspec.to_builtins(message)
    return data


_decoder = msgspec.json.Decoder(MailboxMessage)


def read_mail(raw: object) -> MailboxMessage:
    """The message ``recv`` returned; ``MailboxMessageInvalid`` if it is none eve sent."""
    if isinstance(raw, dict) and "kind" not in raw:
        raw = _older(raw)
    try:
        # through JSON and one typed decoder: ten times as fast as ``msgspec.convert`` to a
        # union, which builds its type information on every call
        message = _decoder.decode(msgspec.json.encode(raw))
    except (msgspec.ValidationError, TypeError) as error:
        raise MailboxMessageInvalid(
            f"a workflow message eve cannot read ({error}); it was not sent by eve's "
            "session service",
            detail=str(error),
        ) from None
    return message


def _older(raw: dict[Any, Any]) -> dict[Any, Any]:
    """An untagged message of an older eve, tagged by the key that told it apart then."""
    if raw.get("cancel"):
        return {"kind": "cancel"}
    if "event" in raw:
        return {"kind": "event", "name": raw["event"], "data": raw.get("data")}
    if "request_id" in raw:
        return {**raw, "kind": "answer"}
    return raw
