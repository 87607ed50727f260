"""What an AI SDK chat request (``DefaultChatTransport``'s POST body) asks eve to do.

The transport sends the chat's whole history every time; an eve session already holds it,
so only the last message counts: a user message is the next turn's message, and an
assistant message whose tool parts carry approval responses (AI SDK 6's
``addToolApprovalResponse``) answers the turn's approval requests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from eve.errors import InvalidBody
from eve.sessions import InputResponse

#: a chat id is a key of the session store's records: printable ASCII, at most this long
MAX_CHAT_ID_CHARS = 128


class UIMessage(msgspec.Struct, frozen=True, kw_only=True):
    """A UI message as the transport sends it (its metadata and other fields ignored)."""

    id: str
    role: Literal["system", "user", "assistant"]
    parts: list[dict[str, Any]]


class ChatRequest(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The POST body; fields the app adds (``body`` of the transport) are ignored."""

    id: str
    messages: list[UIMessage]
    trigger: str = "submit-message"
    message_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class NewMessage:
    """The next turn: the user message's text, and its UI id (the idempotency key)."""

    text: str
    message_id: str


@dataclass(frozen=True, kw_only=True)
class Approvals:
    """Answers to a parked turn's approval requests, from the assistant message's parts."""

    responses: list[InputResponse]


Action = NewMessage | Approvals

_decoder = msgspec.json.Decoder(ChatRequest)


def decode(raw: bytes) -> ChatRequest:
    try:
        request = _decoder.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise InvalidBody(f"the body is not an AI SDK chat request: {error}") from None
    check_chat_id(request.id)
    return request


def check_chat_id(chat_id: str) -> str:
    if not (0 < len(chat_id) <= MAX_CHAT_ID_CHARS and chat_id.isascii() and chat_id.isprintable()):
        raise InvalidBody(
            f"the chat id must be 1 to {MAX_CHAT_ID_CHARS} printable ASCII characters "
            "(useChat's generated ids are)"
        )
    return chat_id


def action_of(request: ChatRequest) -> Action:
    """What the request asks, or ``InvalidBody`` saying why eve cannot do it."""
    if request.trigger != "submit-message":
        raise InvalidBody(
            f"trigger {request.trigger!r} is not supported: an eve turn is durable and "
            "cannot be generated again; send a new message instead"
        )
    if not request.messages:
        raise InvalidBody("`messages` is empty: send the chat's messages, the new one last")
    last = request.messages[-1]
    if last.role == "user":
        return NewMessage(text=_text(last), message_id=last.id)
    if last.role == "assistant":
        responses = [_response(part) for part in last.parts if _responded(part)]
        if responses:
            return Approvals(responses=responses)
    raise InvalidBody(
        f"the last message ({last.role}) is neither a user message nor an assistant message "
        "with tool approval responses: nothing to send"
    )


def _text(message: UIMessage) -> str:
    texts: list[str] = []
    for index, part in enumerate(message.parts):
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif not (isinstance(kind, str) and (kind.startswith("data-") or kind == "step-start")):
            raise InvalidBody(
                f"part {index} of the user message is {kind!r}: the ai_sdk channel takes "
                "text parts (files are not carried yet)"
            )
    text = "\n".join(texts)
    if not text.strip():
        raise InvalidBody("the user message has no text")
    return text


def _responded(part: dict[str, Any]) -> bool:
    kind = part.get("type")
    is_tool = isinstance(kind, str) and (kind.startswith("tool-") or kind == "dynamic-tool")
    return is_tool and part.get("state") == "approval-responded"


def _response(part: dict[str, Any]) -> InputResponse:
    approval = part.get("approval")
    if not (
        isinstance(approval, dict)
        and isinstance(approval.get("id"), str)
        and isinstance(approval.get("approved"), bool)
    ):
        raise InvalidBody("a tool part in state approval-responded has no {id, approved}")
    option = "approve" if approval["approved"] else "deny"
    return InputResponse(request_id=approval["id"], option_id=option)
