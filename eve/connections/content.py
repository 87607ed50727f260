"""An MCP tool result's content blocks as eve's tool-result parts.

MCP results carry text, images (base64), audio, embedded resources (text or a base64 blob)
and resource links (https://modelcontextprotocol.io/specification/2025-06-18/server/tools#tool-result).
Images and documents of the types models take reach the model as images and documents,
as a local tool's ``ImagePart`` would; what no model here takes is said in a text part, so
the model knows something was left out rather than seeing nothing.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from pathlib import PurePosixPath

import mcp_types

from eve.attachments import (
    DOCUMENT_TYPES,
    IMAGE_TYPES,
    MAX_ATTACHMENT_BYTES,
    MAX_ATTACHMENTS_BYTES,
    accepted_types,
)
from eve.messages import DocumentPart, ImagePart, TextPart

ResultPart = TextPart | ImagePart | DocumentPart


def content_parts(blocks: Sequence[mcp_types.ContentBlock]) -> list[ResultPart]:
    """The blocks as parts, media within the providers' limits: an image or document over
    the size one message may carry, or past what the whole result may, is left out and
    said so (a provider would refuse the request, and the turn with it)."""
    parts: list[ResultPart] = []
    media_bytes = 0
    for block in blocks:
        part = _part(block)
        if isinstance(part, ImagePart | DocumentPart):
            size = len(part.data or b"")
            if size > MAX_ATTACHMENT_BYTES or media_bytes + size > MAX_ATTACHMENTS_BYTES:
                part = TextPart(text=_left_out(part.media_type, size))
            else:
                media_bytes += size
        parts.append(part)
    return parts


def _left_out(media_type: str, size: int) -> str:
    return (
        f"[{media_type} content of {size / 1_000_000:.1f} MB left out: models take "
        f"{MAX_ATTACHMENT_BYTES / 1_000_000:g} MB each, {MAX_ATTACHMENTS_BYTES / 1_000_000:g} "
        "MB per result]"
    )


def _part(block: mcp_types.ContentBlock) -> ResultPart:
    match block:
        case mcp_types.TextContent(text=text):
            return TextPart(text=text)
        case mcp_types.ImageContent(data=data, mime_type=media_type):
            return _media(data, media_type, name=None, what="image")
        case mcp_types.AudioContent(mime_type=media_type):
            return TextPart(text=f"[audio content ({media_type}): the model takes no audio]")
        case mcp_types.ResourceLink(uri=uri):
            return TextPart(text=f"[resource link: {uri}]")
        case mcp_types.EmbeddedResource(resource=mcp_types.TextResourceContents(text=text)):
            return TextPart(text=text)
        case mcp_types.EmbeddedResource(resource=mcp_types.BlobResourceContents() as blob):
            name = PurePosixPath(str(blob.uri)).name or None
            return _media(blob.blob, blob.mime_type or "", name=name, what="resource")
        case _:
            return TextPart(text=f"[{getattr(block, 'type', 'unknown')} content]")


def _media(data: str, media_type: str, *, name: str | None, what: str) -> ResultPart:
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return TextPart(text=f"[{what} content ({media_type}) that is not valid base64]")
    if media_type in IMAGE_TYPES:
        return ImagePart(media_type=media_type, data=raw)
    if media_type in DOCUMENT_TYPES:
        return DocumentPart(media_type=media_type, data=raw, name=name)
    kind = media_type or "no type"
    return TextPart(text=f"[{what} content ({kind}): models take {accepted_types()}]")
