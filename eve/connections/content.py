"""An MCP tool result's content blocks as eve's tool-result parts.

MCP results carry text, images (base64), audio, embedded resources (text or a base64 blob)
and resource links (https://modelcontextprotocol.io/specification/2025-06-18/server/tools#tool-result).
Images and documents of the types models take reach the model as images and documents,
as a local tool's ``ImagePart`` would; what no model here takes is said in a text part, so
the model knows something was left out rather than seeing nothing. A resource (embedded or
linked) keeps its URI and media type in a line of its own, with the block's annotations
(audience, priority, last modified); any other block's annotations come in a line before
it. The model needs the URI to read a linked resource through the connection's
``resources`` tool (``connections.resources``) and the annotations to weigh what it got.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from pathlib import PurePosixPath

import mcp_types

from eve._attachments import (
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
        if type(block) is mcp_types.TextContent and block.annotations is None:
            # most results are plain text: no matching, no media to weigh (bench/mcp_call)
            parts.append(TextPart(text=block.text))
        else:
            media_bytes = _add_parts(parts, block, media_bytes)
    return parts


def _add_parts(parts: list[ResultPart], block: mcp_types.ContentBlock, media_bytes: int) -> int:
    """``block``'s parts added to ``parts``; the media bytes the result holds then."""
    for part in _parts(block):
        if isinstance(part, ImagePart | DocumentPart):
            size = len(part.data or b"")
            if size > MAX_ATTACHMENT_BYTES or media_bytes + size > MAX_ATTACHMENTS_BYTES:
                parts.append(TextPart(text=_left_out(part.media_type, size)))
                continue
            media_bytes += size
        parts.append(part)
    return media_bytes


def _left_out(media_type: str, size: int) -> str:
    return (
        f"[{media_type} content of {size / 1_000_000:.1f} MB left out: models take "
        f"{MAX_ATTACHMENT_BYTES / 1_000_000:g} MB each, {MAX_ATTACHMENTS_BYTES / 1_000_000:g} "
        "MB per result]"
    )


def _annotated(block: mcp_types.ContentBlock, parts: list[ResultPart]) -> list[ResultPart]:
    """A text, image or audio block's annotations as a line before it (a resource's are in
    its own line)."""
    notes = annotation_notes(getattr(block, "annotations", None))
    if not notes:
        return parts
    line = f"[annotations: {'; '.join(notes)}]"
    first = parts[0]
    if isinstance(first, TextPart):  # one text part, as the block was one text
        return [TextPart(text=f"{line}\n{first.text}"), *parts[1:]]
    return [TextPart(text=line), *parts]


def _parts(block: mcp_types.ContentBlock) -> list[ResultPart]:
    match block:
        case mcp_types.TextContent(text=text):
            return _annotated(block, [TextPart(text=text)])
        case mcp_types.ImageContent(data=data, mime_type=media_type):
            return _annotated(block, [_media(data, media_type, name=None, what="image")])
        case mcp_types.AudioContent(mime_type=media_type):
            said = f"[audio content ({media_type}): the model takes no audio]"
            return _annotated(block, [TextPart(text=said)])
        case mcp_types.ResourceLink():
            described = f": {block.description}" if block.description else ""
            said = f" named {block.name!r}{described}"
            line = resource_line("resource link", str(block.uri), block.mime_type, block, said)
            return [TextPart(text=line)]
        case mcp_types.EmbeddedResource(resource=mcp_types.TextResourceContents() as text):
            line = resource_line("resource", str(text.uri), text.mime_type, block)
            return [TextPart(text=f"{line}\n{text.text}")]
        case mcp_types.EmbeddedResource(resource=mcp_types.BlobResourceContents() as blob):
            uri = str(blob.uri)
            name = PurePosixPath(uri).name or None
            line = resource_line("resource", uri, blob.mime_type, block)
            media = _media(blob.blob, blob.mime_type or "", name=name, what="resource")
            return [TextPart(text=line), media]
        case _:
            return [TextPart(text=f"[{getattr(block, 'type', 'unknown')} content]")]


def resource_line(
    what: str,
    uri: str,
    media_type: str | None,
    block: mcp_types.ContentBlock,
    said: str = "",
) -> str:
    """``[resource file:///a.txt (text/plain; priority: 0.9)]``: a resource as the model is
    told of it, with its block's annotations."""
    annotations = getattr(block, "annotations", None)
    details = "; ".join([media_type or "no media type", *annotation_notes(annotations)])
    return f"[{what} {uri} ({details}){said}]"


def annotation_notes(annotations: mcp_types.Annotations | None) -> list[str]:
    """A block's annotations as phrases (``audience: user``, ``priority: 0.9``)."""
    if annotations is None:
        return []
    notes: list[str] = []
    if annotations.audience:
        notes.append("audience: " + ", ".join(annotations.audience))
    if annotations.priority is not None:
        notes.append(f"priority: {annotations.priority:g}")
    if annotations.last_modified:
        notes.append(f"last modified: {annotations.last_modified}")
    return notes


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
