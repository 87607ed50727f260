"""The ``application/vnd.amazon.eventstream`` framing ConverseStream answers in, written here
because botocore ships only its decoder (``botocore.eventstream``).

Each message is a prelude (total length and headers length, both big-endian uint32, then a
CRC32 of those 8 bytes), the headers, the payload, and a CRC32 of everything before it; a
header is its name's length (uint8), the name, a value type (7: a string), the value's length
(uint16) and the value (Smithy, "Amazon Event Stream",
https://smithy.io/2.0/aws/amazon-eventstream.html, "Message format"). An event carries
``:message-type: event`` and its member name in ``:event-type``; a modelled error carries
``:message-type: exception`` and its name in ``:exception-type``; the payload is the member's
JSON (Smithy, "Event stream message format for the AWS JSON protocols").
"""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any

_STRING = 7


def _header(name: str, value: str) -> bytes:
    key, text = name.encode(), value.encode()
    return struct.pack(">B", len(key)) + key + struct.pack(">BH", _STRING, len(text)) + text


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One message: ``headers`` (string values) and ``payload``, with both checksums."""
    encoded = b"".join(_header(name, value) for name, value in headers.items())
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    head = prelude + struct.pack(">I", zlib.crc32(prelude)) + encoded + payload
    return head + struct.pack(">I", zlib.crc32(head))


def _message(kind: str, name: str, body: dict[str, Any]) -> bytes:
    headers = {
        f":{kind}-type": name,
        ":content-type": "application/json",
        ":message-type": kind,
    }
    return frame(headers, json.dumps(body).encode())


def event(name: str, body: dict[str, Any]) -> bytes:
    """An event of the stream (``messageStart``, ``contentBlockDelta`` …)."""
    return _message("event", name, body)


def exception(name: str, body: dict[str, Any]) -> bytes:
    """A modelled error inside the stream (``modelStreamErrorException`` …)."""
    return _message("exception", name, body)
