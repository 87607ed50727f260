"""Conversation messages and their content parts: what the loop records, transcripts and
durable sessions store, and models receive.

A message is a list of ordered **content parts**, tagged unions on ``type``:

* a user's message and a tool's result hold ``text``, ``image`` and ``document`` parts;
* an assistant message holds what the model produced, in the order it produced it:
  ``text``, ``reasoning`` (with the provider's signature or encrypted payload), ``tool-call``
  and ``provider`` parts (a provider-native block, such as a server tool's call and result or
  cited text, kept opaque and tagged with the provider that produced it).

Boundary data: the loop, the model adapters, sessions and the server import this module; it
imports none of them. Messages written before content parts (``{"role": "user", "text":
…}``, an assistant's ``text`` and ``tool_calls``, a tool result's string ``content``) still
decode: their fields become parts (``_legacy`` below) and are never written again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal, assert_never

import msgspec

from eve.errors import MessageInvalid

__all__ = [
    "AssistantMessage",
    "AssistantPart",
    "CompactionMark",
    "DocumentPart",
    "ImagePart",
    "MediaPart",
    "Message",
    "ProviderPart",
    "ReasoningPart",
    "TextPart",
    "ToolCall",
    "ToolCallPart",
    "ToolResultMessage",
    "ToolResultPart",
    "UserMessage",
    "UserPart",
    "assistant_message",
    "plain_transcript",
    "tool_result",
    "user_message",
]

#: why a model response ended, in eve's words (each provider's own reasons map onto these)
StopReason = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "other"]


class _Part(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", omit_defaults=True):
    pass


class TextPart(_Part, frozen=True, kw_only=True, tag="text"):
    """Plain text."""

    text: str


class _Media(_Part, frozen=True, kw_only=True):
    """Bytes with their media type, or a URL the provider fetches; exactly one of the two."""

    media_type: str
    #: the content itself (base64 in JSON)
    data: bytes | None = None
    url: str | None = None

    def __post_init__(self) -> None:
        if (self.data is None) == (self.url is None):
            raise MessageInvalid(f"the {self.kind} part needs exactly one of `data` and `url`")

    @property
    def kind(self) -> str:
        """``image`` or ``document``: the tag it is encoded with."""
        return str(self.__struct_config__.tag)


class ImagePart(_Media, frozen=True, kw_only=True, tag="image"):
    """An image (``image/png``, ``image/jpeg``, ``image/gif``, ``image/webp``)."""


class DocumentPart(_Media, frozen=True, kw_only=True, tag="document"):
    """A document (``application/pdf``, ``text/plain``)."""

    #: a file name to show the model, when it has one
    name: str | None = None


class ReasoningPart(_Part, frozen=True, kw_only=True, tag="reasoning"):
    """The model's reasoning, with what its provider needs to accept it back verbatim."""

    #: the provider that produced it (``anthropic``, ``openai``): only it is sent this back
    provider: str
    #: the readable reasoning (a summary on providers that only show one); empty if redacted
    text: str = ""
    #: Anthropic's signature over a thinking block
    signature: str | None = None
    #: the reasoning is hidden: ``payload`` is all there is (Anthropic ``redacted_thinking``)
    redacted: bool = False
    #: an opaque payload the provider needs back: Anthropic's redacted data, OpenAI's
    #: encrypted reasoning content
    payload: str | None = None
    #: the provider's id for the item (OpenAI ``rs_…``)
    item_id: str | None = None


class ToolCallPart(_Part, frozen=True, kw_only=True, tag="tool-call"):
    """One tool call the model asked for."""

    id: str
    name: str
    input: dict[str, Any]


class ProviderPart(_Part, frozen=True, kw_only=True, tag="provider"):
    """A provider-native block, sent back to that provider as it came and to no other.

    ``block`` is the block as the provider's API returns it (a server tool's call or result,
    text with citations); ``text`` is what a person or another provider may read of it.
    """

    provider: str
    block: dict[str, Any]
    text: str = ""
    #: ``text`` is part of the model's answer (cited text), not a description of the block
    #: (the pages a search found): it counts in the message's text
    answer: bool = False

    @property
    def block_type(self) -> str:
        """The provider's type of the block (``server_tool_use``, ``web_search_tool_result``)."""
        return str(self.block.get("type", ""))


#: a tool call as the loop and tools see it
ToolCall = ToolCallPart
MediaPart = ImagePart | DocumentPart
UserPart = TextPart | ImagePart | DocumentPart
ToolResultPart = TextPart | ImagePart | DocumentPart
AssistantPart = TextPart | ReasoningPart | ToolCallPart | ProviderPart


class _Message(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    tag_field="role",
    omit_defaults=True,
    # weakly referable: a message's token estimate is remembered while it lives
    # (``execution.trim.estimate_tokens``); the slot is not encoded
    weakref=True,
):
    pass


def _joined(parts: Iterable[object]) -> str:
    return "".join(
        p.text
        for p in parts
        if isinstance(p, TextPart) or (isinstance(p, ProviderPart) and p.answer)
    )


class CompactionMark(msgspec.Struct, frozen=True, kw_only=True):
    """What marks a user-side message as a compaction summary (see ``summary_message``)."""

    #: how many messages before the summary it stands for
    folded: int
    #: how many messages right before the summary are still sent as they are, after it
    kept: int = 0


class UserMessage(_Message, frozen=True, kw_only=True, tag="user"):
    parts: list[UserPart] = []
    #: set on the summary a compaction wrote: the model reads it instead of the ``folded``
    #: messages before it (the history and transcript keep them; see ``model_view``)
    compaction: CompactionMark | None = None
    #: a message from before content parts: its text (folded into ``parts`` on decode)
    legacy_text: str | None = msgspec.field(default=None, name="text")

    def __post_init__(self) -> None:
        if self.legacy_text is not None:
            _legacy(self, "legacy_text", [TextPart(text=self.legacy_text), *self.parts])

    @property
    def text(self) -> str:
        """The message's text parts, joined."""
        return _joined(self.parts)


class AssistantMessage(_Message, frozen=True, kw_only=True, tag="assistant"):
    parts: list[AssistantPart] = []
    legacy_text: str | None = msgspec.field(default=None, name="text")
    legacy_tool_calls: list[ToolCallPart] | None = msgspec.field(default=None, name="tool_calls")

    def __post_init__(self) -> None:
        if self.legacy_text is not None or self.legacy_tool_calls is not None:
            text = [TextPart(text=self.legacy_text)] if self.legacy_text else []
            calls = self.legacy_tool_calls or []
            msgspec.structs.force_setattr(self, "legacy_tool_calls", None)
            _legacy(self, "legacy_text", [*text, *calls], self.parts)

    @property
    def text(self) -> str:
        """The model's text, all its text parts joined in order."""
        return _joined(self.parts)

    @property
    def tool_calls(self) -> list[ToolCallPart]:
        """The calls it asked for, in order."""
        return [p for p in self.parts if isinstance(p, ToolCallPart)]


class ToolResultMessage(_Message, frozen=True, kw_only=True, tag="tool"):
    """The one result every tool call gets; ``is_error`` results are shown to the model too."""

    tool_call_id: str
    parts: list[ToolResultPart] = []
    is_error: bool = False
    #: the tool that produced it; for a call made through ``eve__tool``, the catalog entry's
    #: name (the call it answers still says ``eve__tool``). Empty in transcripts from before.
    name: str = ""
    legacy_content: str | None = msgspec.field(default=None, name="content")

    def __post_init__(self) -> None:
        if self.legacy_content is not None:
            _legacy(self, "legacy_content", [TextPart(text=self.legacy_content), *self.parts])

    @property
    def content(self) -> str:
        """What the model reads as text: the text parts, joined."""
        return _joined(self.parts)

    @property
    def media(self) -> list[MediaPart]:
        """The images and documents the result carries."""
        return [p for p in self.parts if isinstance(p, ImagePart | DocumentPart)]


def _legacy(
    message: _Message, field: str, parts: Sequence[object], after: Sequence[object] = ()
) -> None:
    # a frozen Struct: the old fields are folded once, while the value is being built
    msgspec.structs.force_setattr(message, "parts", [*parts, *after])
    msgspec.structs.force_setattr(message, field, None)


Message = UserMessage | AssistantMessage | ToolResultMessage


def user_message(text: str, attachments: Sequence[MediaPart] = ()) -> UserMessage:
    """A user's message: its text, then any images or documents."""
    parts: list[UserPart] = [TextPart(text=text)] if text else []
    return UserMessage(parts=[*parts, *attachments])


def summary_message(summary: str, *, folded: int, kept: int) -> UserMessage:
    """The message a compaction appends: the summary of the ``folded`` messages before the
    last ``kept`` ones, as user-side text every provider accepts."""
    text = f"Summary of the conversation so far (older messages were folded into it):\n{summary}"
    return UserMessage(
        parts=[TextPart(text=text)], compaction=CompactionMark(folded=folded, kept=kept)
    )


def model_view(history: Sequence[Message]) -> list[Message]:
    """What the model is sent of ``history``: after the last compaction summary, the summary,
    then the messages it kept, then everything recorded after it; the whole history when
    nothing was compacted. A summary written by an earlier compaction is folded into a
    later one, so only the last counts."""
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if isinstance(message, UserMessage) and message.compaction is not None:
            kept = message.compaction.kept
            return [message, *history[index - kept : index], *history[index + 1 :]]
    return list(history)


def assistant_message(text: str = "", tool_calls: Sequence[ToolCallPart] = ()) -> AssistantMessage:
    """An assistant message of plain text then tool calls (what a simple model produces)."""
    parts: list[AssistantPart] = [TextPart(text=text)] if text else []
    return AssistantMessage(parts=[*parts, *tool_calls])


def tool_result(
    call_id: str,
    content: str,
    *,
    name: str = "",
    is_error: bool = False,
    media: Sequence[MediaPart] = (),
) -> ToolResultMessage:
    """A tool result: the text the model reads, then any images or documents."""
    return ToolResultMessage(
        tool_call_id=call_id,
        parts=[TextPart(text=content), *media],
        name=name,
        is_error=is_error,
    )


def parts_for(provider: str, parts: Sequence[AssistantPart]) -> list[AssistantPart]:
    """``parts`` as ``provider`` may receive them.

    Reasoning and provider blocks are only valid where they came from: a signature or an
    encrypted payload is checked by the provider that made it, and another provider rejects
    blocks of types it does not know. So another provider's reasoning is dropped, and another
    provider's native block becomes its readable text (dropped when it has none). Text and
    tool calls go everywhere.
    """
    kept: list[AssistantPart] = []
    for part in parts:
        match part:
            case TextPart() | ToolCallPart():
                kept.append(part)
            case ReasoningPart():
                if part.provider == provider:
                    kept.append(part)
            case ProviderPart():
                if part.provider == provider:
                    kept.append(part)
                elif part.text:
                    kept.append(TextPart(text=part.text))
            case _:
                assert_never(part)
    return kept


def plain_transcript(messages: Sequence[Message]) -> str:
    """``messages`` as plain text for a model to read about a conversation (a compaction's
    summarizer, an eval's judge): one line per message, tool calls and results named."""
    lines: list[str] = []
    for message in messages:
        match message:
            case UserMessage(compaction=None):
                lines.append(f"user: {message.text}")
            case UserMessage():
                lines.append(f"(earlier summary) {message.text}")
            case AssistantMessage():
                calls = [
                    f"[called {c.name}({msgspec.json.encode(c.input).decode()})]"
                    for c in message.tool_calls
                ]
                lines.append(" ".join(["assistant:", message.text, *calls]).strip())
            case ToolResultMessage():
                flag = " (error)" if message.is_error else ""
                lines.append(f"tool result{flag} {message.name}: {message.content}")
    return "\n".join(lines)
