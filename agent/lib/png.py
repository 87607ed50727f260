"""A minimal PNG writer (zlib and struct from the standard library): enough for the shop's
price chart, with no imaging dependency."""

import struct
import zlib

Pixel = tuple[int, int, int]


def _chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))


def encode_png(rows: list[list[Pixel]]) -> bytes:
    """An 8-bit RGB PNG of ``rows`` (top to bottom, all the same width)."""
    height, width = len(rows), len(rows[0])
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    # each scanline starts with its filter type: 0, none
    raw = b"".join(b"\x00" + bytes(v for pixel in row for v in pixel) for row in rows)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(raw, 9))
        + _chunk(b"IEND", b"")
    )
