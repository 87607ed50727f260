"""The bodies of the session API's requests (``/eve/v1``), as clients send them and the
server decodes them (strictly: an unknown field is ``InvalidBody``).

Encoded with their defaults left out, so a client sends only what it sets: ``{}`` for a
session with no first message, ``{"inputResponses": [...]}`` for answers.
"""

from __future__ import annotations

from typing import Any

import msgspec

#: a message as a body carries it: text, or content parts as JSON (the server decodes them
#: itself, so a bad part is ``InvalidPart`` with its path, not the body's ``InvalidBody``)
RawMessage = str | list[Any]


class RequestBody(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    forbid_unknown_fields=True,
    omit_defaults=True,
    rename="camel",
):
    """What every request body is."""


class InputResponse(RequestBody, frozen=True, kw_only=True, forbid_unknown_fields=False):
    """An answer to an input request a parked turn waits on (from ``input.requested``);
    an entry's unknown fields are ignored, as they always were."""

    request_id: str
    #: one of the request's ``options``
    option_id: str
    #: a form's values, for ``accept`` (an MCP server's elicitation: ``form_requests``)
    values: dict[str, Any] | None = None


class CreateBody(RequestBody, frozen=True, kw_only=True):
    """``POST /eve/v1/session``: a new session, with a first turn when ``message`` is set."""

    message: RawMessage | None = None


class FollowUpBody(RequestBody, frozen=True, kw_only=True):
    """``POST /eve/v1/session/{id}``: exactly one of a message and answers."""

    message: RawMessage | None = None
    input_responses: list[InputResponse] | None = None
    #: only ``queue`` (the default): a message sent mid-turn waits for the turn to end
    turn_policy: str = "queue"


class TaskEventBody(RequestBody, frozen=True, kw_only=True):
    """``POST …/tasks/{task_id}/events``: an event for a workflow tool waiting in
    ``wait_for_event(name)``."""

    name: str
    data: Any = None
