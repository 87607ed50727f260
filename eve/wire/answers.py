"""The bodies of the session API's answers (``/eve/v1``), as the server writes them and
clients read them.

Every JSON answer has ``"ok"`` first: ``true``, or ``false`` on a refusal. The Structs
leave it out and ``encode_answer`` puts it in, so a document that is also something else
(``AgentInfo`` is ``eve info --json``'s, ``SessionSummary`` what the client decodes) is one
Struct. Lists whose entries are another package's Structs (memories, schedule statuses)
are carried as their JSON data: this module imports no package.
"""

from __future__ import annotations

from typing import Any

import msgspec


class AnswerBody(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """What every answer's body is (besides ``ok``)."""


class Health(AnswerBody, frozen=True, kw_only=True):
    """``GET /health``."""

    status: str = "ready"


class Accepted(AnswerBody, frozen=True, kw_only=True, omit_defaults=True):
    """The server took the request; the turn (if any) runs in the background.

    What a create, message or answer request is answered with (``202``), and a cancel,
    reset, compaction or fork (``201``: ``session_id`` is the new session's)."""

    session_id: str
    #: ``accepted`` (a message), ``resolved`` (input responses), ``cancelling``,
    #: ``no_active_turn``, ``reset``, ``compacting`` or ``forked``
    status: str
    #: ``turn_<n>`` when a message started or queued a turn; left out otherwise
    turn_id: str | None = None
    #: a fork's source; left out otherwise
    forked_from: str | None = None


class TaskEventDelivered(AnswerBody, frozen=True, kw_only=True):
    """``POST …/tasks/{task_id}/events``: the event is in the task's mailbox."""

    session_id: str
    task_id: str
    status: str = "delivered"


class Refusal(AnswerBody, frozen=True, kw_only=True):
    """``{ok: false, code, error}``: the error's code (``docs/errors.md``) and what it says.
    The defaults read an answer that is not eve's (a proxy's HTML page)."""

    code: str = "http_error"
    error: str = ""


class Memories(AnswerBody, frozen=True, kw_only=True):
    """``GET /memory``: the entries the caller may see, as JSON."""

    memories: list[Any]


class Forgotten(AnswerBody, frozen=True, kw_only=True):
    """``DELETE /memory/{id}``."""

    forgotten: list[str]


class Erased(AnswerBody, frozen=True, kw_only=True):
    """``DELETE /memory?slot=``: how many entries were erased."""

    erased: int


class Schedules(AnswerBody, frozen=True, kw_only=True):
    """``GET /schedules``: each schedule's status, as JSON."""

    schedules: list[Any]


class ScheduleAnswer(AnswerBody, frozen=True, kw_only=True):
    """``POST /schedules/{name}/pause`` and ``…/resume``: the schedule's status, as JSON."""

    schedule: Any


class ScheduleQueued(AnswerBody, frozen=True, kw_only=True):
    """``POST /schedules/{name}/run``: its run is queued as ``workflow_id``."""

    name: str
    status: str = "queued"
    workflow_id: str


class SignedIn(AnswerBody, frozen=True, kw_only=True):
    """``GET /oauth/callback``: an MCP connection's sign-in came back (a browser shows it)."""

    status: str = "signed_in"
    message: str


class OIDCLogin(AnswerBody, frozen=True, kw_only=True):
    """What the dev UI needs to sign a person in at the server's OIDC issuer."""

    issuer: str
    client_id: str
    authorization_endpoint: str
    token_endpoint: str
    audience: str
    #: the scopes the UI asks for
    scope: str


class AuthConfig(AnswerBody, frozen=True, kw_only=True):
    """``GET /auth/config``: the OIDC login the UI can offer; None when it can offer none."""

    oidc: OIDCLogin | None


def encode_answer(body: msgspec.Struct, *, ok: bool = True) -> bytes:
    """``body`` as JSON with ``"ok"`` first."""
    return msgspec.json.encode({"ok": ok, **msgspec.to_builtins(body)})


_refusal = msgspec.json.Decoder(Refusal)


def decode_refusal(content: bytes) -> Refusal:
    """A refusal's body; any body that is not one (a proxy's page) as its first 200
    characters, with the code ``http_error``."""
    try:
        return _refusal.decode(content)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return Refusal(error=content[:200].decode("utf-8", "replace"))
