"""What an A2A message asks of eve: a user message for a new turn, or answers to a parked one.

A message to a task in ``input-required`` answers the requests it waits on: its text names
an option (``approve``, ``deny``, a question's option id or label) for every waiting request,
or its data parts each hold ``{"optionId": ..., "requestId": ...}`` (``requestId`` may be
left out while one request waits; a form's ``values`` go with ``accept``). Anything else is
refused before eve stores a thing.
"""

from __future__ import annotations

import json
from typing import Any

from a2a.helpers import get_data_parts
from a2a.types import Message, Part
from a2a.utils.errors import InvalidParamsError

from eve._attachments import IMAGE_TYPES
from eve.events import InputRequest
from eve.messages import DocumentPart, ImagePart, TextPart, UserMessage, UserPart
from eve.sessions import InputResponse


def user_message_of(message: Message) -> UserMessage:
    """``message``'s parts as eve's: text as text, a file (bytes or URL) as an image or a
    document by its media type, structured data as its JSON text."""
    parts = [_part(part, index) for index, part in enumerate(message.parts)]
    if not parts:
        raise InvalidParamsError("the message has no parts: send a text, file or data part")
    return UserMessage(parts=parts)


def _part(part: Part, index: int) -> UserPart:
    match part.WhichOneof("content"):
        case "text":
            return TextPart(text=part.text)
        case "data":
            [data] = get_data_parts([part])
            return TextPart(text=json.dumps(data))
        case "raw":
            return _media(part, index, data=part.raw, url=None)
        case "url":
            return _media(part, index, data=None, url=part.url)
        case _:
            raise InvalidParamsError(f"part {index} of the message has no content")


def _media(part: Part, index: int, *, data: bytes | None, url: str | None) -> UserPart:
    if not part.media_type:
        raise InvalidParamsError(
            f"part {index} of the message is a file without a mediaType: say what it is "
            "(image/png, application/pdf…)"
        )
    if part.media_type in IMAGE_TYPES:
        return ImagePart(media_type=part.media_type, data=data, url=url)
    # a type no model takes is refused by the session's attachment check, by name
    return DocumentPart(media_type=part.media_type, data=data, url=url, name=part.filename or None)


def answers_of(message: Message, pending: list[InputRequest]) -> list[InputResponse]:
    """The answers ``message`` gives to the ``pending`` requests of its task."""
    data = [d for d in get_data_parts(list(message.parts)) if isinstance(d, dict)]
    if data:
        return [_decision(d, pending) for d in data]
    text = " ".join(p.text for p in message.parts if p.WhichOneof("content") == "text").strip()
    if not text:
        raise InvalidParamsError(_how_to_answer(pending))
    return [InputResponse(request_id=r.request_id, option_id=_option(r, text)) for r in pending]


def _decision(data: dict[str, Any], pending: list[InputRequest]) -> InputResponse:
    option = data.get("optionId")
    request_id = data.get("requestId")
    # a form's (an MCP server's elicitation) fields, for accept: checked where eve takes it
    values = data.get("values")
    if request_id is None and len(pending) == 1:
        request_id = pending[0].request_id
    if (
        not isinstance(option, str)
        or not isinstance(request_id, str)
        or not isinstance(values, dict | None)
    ):
        raise InvalidParamsError(_how_to_answer(pending))
    return InputResponse(request_id=request_id, option_id=option, values=values)


def _option(request: InputRequest, text: str) -> str:
    wanted = text.casefold()
    for option in request.options:
        if wanted in (option.id.casefold(), option.label.casefold()):
            return option.id
    offered = ", ".join(option.id for option in request.options)
    raise InvalidParamsError(
        f"{text!r} answers no option of request {request.request_id}: it offers {offered}"
    )


def _how_to_answer(pending: list[InputRequest]) -> str:
    waiting = "; ".join(f"{r.request_id} ({', '.join(o.id for o in r.options)})" for r in pending)
    return (
        "the task waits for input: answer with the text of an option, or data parts "
        f'{{"requestId": ..., "optionId": ..., "values": {{...}} (a form\'s, to accept it)}}; '
        f"waiting: {waiting}"
    )
