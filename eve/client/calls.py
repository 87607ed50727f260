"""The client's sans-IO core: each API operation as a ``Call``, a request described as data
with the reader of its answer.

``EveClient`` and ``AsyncEveClient`` build the same ``Call`` for each method and differ only
in how they send it and wait (``httpx.Client`` or ``httpx.AsyncClient``); what a request
carries and how its answer is read (``eve.wire``) is written once, here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar
from urllib.parse import urlencode

import msgspec

from eve._attachments import read_attachment
from eve._session_summary import SessionPage, SessionSummary, decode_page, decode_summary
from eve.client.protocol import PREFIX, Attachable
from eve.messages import user_message
from eve.wire.answers import Accepted
from eve.wire.requests import CreateBody, FollowUpBody, InputResponse, RawMessage, RequestBody

T = TypeVar("T")

_accepted = msgspec.json.Decoder(Accepted)
_document = msgspec.json.Decoder(dict[str, Any])


@dataclass(frozen=True, kw_only=True)
class Call(Generic[T]):
    """One request and how to read its answer's body."""

    method: str
    #: the path under the server's root, query included
    path: str
    body: RequestBody | None = None
    #: a POST that carries an ``Idempotency-Key`` and is sent again after a lost
    #: connection or a 503 (``protocol.Attempt``)
    repeatable: bool = False
    read: Callable[[bytes], T]

    @property
    def content(self) -> bytes | None:
        return None if self.body is None else msgspec.json.encode(self.body)

    def headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The request's own headers (its body's type) and ``extra`` (a retry's key)."""
        own = {"content-type": "application/json"} if self.body is not None else {}
        return {**own, **(extra or {})}


def session_path(session_id: str, action: str = "") -> str:
    suffix = f"/{action}" if action else ""
    return f"{PREFIX}/session/{session_id}{suffix}"


def _raw_message(message: str | None, attachments: Sequence[Attachable]) -> RawMessage | None:
    """A message as a body carries it: its text as a string, or, with attachments, its parts
    (files are read here, and refused here when no model takes their type)."""
    if not attachments:
        return message
    media = [read_attachment(a) if isinstance(a, Path) else a for a in attachments]
    parts: list[Any] = msgspec.to_builtins(user_message(message or "", media).parts)
    return parts


def _post(path: str, body: RequestBody) -> Call[Accepted]:
    return Call(method="POST", path=path, body=body, repeatable=True, read=_accepted.decode)


class Calls:
    """The API's operations, each a ``Call`` (a namespace: both clients import it)."""

    @staticmethod
    def health() -> Call[dict[str, Any]]:
        return Call(method="GET", path=PREFIX + "/health", read=_document.decode)

    @staticmethod
    def info() -> Call[dict[str, Any]]:
        return Call(method="GET", path=PREFIX + "/info", read=_document.decode)

    @staticmethod
    def create(message: str | None, attachments: Sequence[Attachable] = ()) -> Call[Accepted]:
        return _post(PREFIX + "/session", CreateBody(message=_raw_message(message, attachments)))

    @staticmethod
    def send(
        session_id: str, message: str, attachments: Sequence[Attachable] = ()
    ) -> Call[Accepted]:
        body = FollowUpBody(message=_raw_message(message, attachments))
        return _post(session_path(session_id), body)

    @staticmethod
    def respond(
        session_id: str,
        answers: Mapping[str, str],
        values: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> Call[Accepted]:
        """``{request_id: option_id}`` as answers; ``values`` are a form's (``kind: "form"``) by
        request id, sent with its answer."""
        given = values or {}
        responses = [
            InputResponse(
                request_id=request_id,
                option_id=option_id,
                values=dict(given[request_id]) if request_id in given else None,
            )
            for request_id, option_id in answers.items()
        ]
        return _post(session_path(session_id), FollowUpBody(input_responses=responses))

    @staticmethod
    def session(session_id: str) -> Call[SessionSummary]:
        return Call(method="GET", path=session_path(session_id), read=decode_summary)

    @staticmethod
    def sessions(limit: int, cursor: str | None) -> Call[SessionPage]:
        """``limit`` sessions after ``cursor`` (a page's ``next_cursor``; None for the newest)."""
        query = {"limit": str(limit), **({"cursor": cursor} if cursor else {})}
        path = f"{PREFIX}/sessions?{urlencode(query)}"
        return Call(method="GET", path=path, read=decode_page)

    @staticmethod
    def fork(session_id: str) -> Call[Accepted]:
        """A POST with no body, repeatable: its ``Idempotency-Key`` makes one fork of it."""
        path = session_path(session_id, "fork")
        return Call(method="POST", path=path, repeatable=True, read=_accepted.decode)

    @staticmethod
    def action(session_id: str, name: str) -> Call[Accepted]:
        """``cancel``, ``compact`` or ``reset``: a POST with no body, tried once."""
        return Call(method="POST", path=session_path(session_id, name), read=_accepted.decode)
