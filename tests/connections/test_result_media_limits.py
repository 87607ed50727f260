"""An MCP result's media within the providers' limits: what is over is left out, said so."""

from __future__ import annotations

import base64

import mcp_types

from eve._attachments import MAX_ATTACHMENT_BYTES
from eve.connections.content import content_parts
from eve.messages import ImagePart, TextPart
from tests.connections.mcp_test_server import PIXEL


def test_media_over_the_providers_limits_is_left_out_with_a_marker() -> None:
    big = base64.b64encode(b"\x89PNG" + bytes(MAX_ATTACHMENT_BYTES)).decode()
    small = base64.b64encode(PIXEL).decode()
    blocks: list[mcp_types.ContentBlock] = [
        mcp_types.ImageContent(type="image", data=big, mime_type="image/png"),
        mcp_types.ImageContent(type="image", data=small, mime_type="image/png"),
    ]
    left_out, kept = content_parts(blocks)
    assert isinstance(left_out, TextPart)
    assert left_out.text.startswith("[image/png content of 5.0 MB left out: models take 5 MB")
    assert isinstance(kept, ImagePart) and kept.data == PIXEL
