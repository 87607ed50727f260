"""What a user may attach to a message: the media types models take, the size limits, a file
read into a part, and what the ``message.received`` event says of each (never the bytes).

Attachments are checked where they come in (``eve run --attach``, ``/attach`` in ``eve dev``,
the client, an HTTP body), so a part a provider would refuse fails before a turn is queued,
with a named error. Boundary code like ``eve.messages``: the CLI, the client, the server,
sessions and the loop import it; it imports none of them.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import assert_never

from eve.errors import AttachmentError, AttachmentTooLarge, AttachmentUnsupported
from eve.events import Attachment
from eve.messages import DocumentPart, ImagePart, MediaPart, TextPart, UserPart

#: the image types both Anthropic and OpenAI take
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
#: the document types eve sends (a PDF, or plain text)
DOCUMENT_TYPES = ("application/pdf", "text/plain")
#: one attachment's content, in bytes: Anthropic's limit for one image sent to its API
MAX_ATTACHMENT_BYTES = 5_000_000
#: all of one message's attachments together, in bytes
MAX_ATTACHMENTS_BYTES = 10_000_000
_SCHEMES = ("https://", "http://")


@dataclass(frozen=True, kw_only=True)
class AttachmentLimits:
    """How large attachments may be, in bytes of content (before base64)."""

    #: one attachment
    each: int = MAX_ATTACHMENT_BYTES
    #: all of one message's attachments together
    total: int = MAX_ATTACHMENTS_BYTES


def accepted_types() -> str:
    """The media types a message or tool result may carry, as a list to show a person."""
    return ", ".join((*IMAGE_TYPES, *DOCUMENT_TYPES))


def _too_large(what: str, size: int, limit: int) -> AttachmentTooLarge:
    return AttachmentTooLarge(
        f"{what} has {size} bytes; the limit is {limit}: send a smaller file "
        "(resize the image, split the document)",
        limit=limit,
        size=size,
    )


def read_attachment(path: Path, *, limits: AttachmentLimits | None = None) -> MediaPart:
    """The file at ``path`` as an image or document part, its media type from its name.

    Raises ``AttachmentUnsupported`` for a type no provider takes, ``AttachmentTooLarge`` over
    ``limits.each`` (checked before reading) and ``AttachmentError`` when it cannot be read.
    """
    limits = limits or AttachmentLimits()
    media_type = mimetypes.guess_type(path.name)[0] or ""
    if media_type not in IMAGE_TYPES + DOCUMENT_TYPES:
        told = f"is {media_type}" if media_type else "has a name that does not tell its type"
        raise AttachmentUnsupported(
            f"{path} {told}; models take {accepted_types()} (name the file .png, .jpg, .gif, "
            ".webp, .pdf or .txt)",
            media_type=media_type,
            source=str(path),
        )
    try:
        size = path.stat().st_size
        if size > limits.each:
            raise _too_large(str(path), size, limits.each)
        data = path.read_bytes()
    except OSError as error:
        raise AttachmentError(f"cannot read {path}: {error.strerror or error}") from None
    if media_type in IMAGE_TYPES:
        return ImagePart(media_type=media_type, data=data)
    return DocumentPart(media_type=media_type, data=data, name=path.name)


def check_attachments(
    parts: Sequence[UserPart], limits: AttachmentLimits, *, where: str = "$.message"
) -> None:
    """Refuse what a provider would: a media type it does not take for the part's kind, a
    URL that is not http(s), content over ``limits``. ``where`` names the list in messages."""
    total = 0
    for index, part in enumerate(parts):
        match part:
            case TextPart():
                continue
            case ImagePart() | DocumentPart():
                source = f"{where}[{index}]"
                _check_part(part, source)
                size = len(part.data) if part.data is not None else 0
                if size > limits.each:
                    raise _too_large(f"the {part.kind} at {source}", size, limits.each)
                total += size
            case _:
                assert_never(part)
    if total > limits.total:
        raise _too_large("the message's attachments together", total, limits.total)


def _check_part(part: MediaPart, source: str) -> None:
    takes = IMAGE_TYPES if isinstance(part, ImagePart) else DOCUMENT_TYPES
    if part.media_type not in takes:
        raise AttachmentUnsupported(
            f"the {part.kind} at {source} is {part.media_type or 'of no type'}; an {part.kind} "
            f"part takes {', '.join(takes)}",
            media_type=part.media_type,
            source=source,
        )
    if part.url is not None and not part.url.startswith(_SCHEMES):
        raise AttachmentUnsupported(
            f"the {part.kind} at {source} has a url that is not http:// or https://; "
            "send its content as base64 `data` instead",
            media_type=part.media_type,
            source=source,
        )


def attachments_of(parts: Sequence[UserPart]) -> list[Attachment]:
    """What ``message.received`` says of a message's images and documents: no content."""
    found: list[Attachment] = []
    for part in parts:
        match part:
            case TextPart():
                continue
            case ImagePart() | DocumentPart():
                found.append(
                    Attachment(
                        type="image" if isinstance(part, ImagePart) else "document",
                        media_type=part.media_type,
                        name=part.name if isinstance(part, DocumentPart) else None,
                        size=len(part.data) if part.data is not None else None,
                        url=part.url,
                    )
                )
            case _:
                assert_never(part)
    return found
