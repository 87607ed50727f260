"""Size caps for what the built-in tools hand back to the model, and how they say so.

A model's context is finite and a tool result is re-sent on every later request, so every
built-in bounds its output and ends it with a note when it cut something: the model must
be able to tell "the file ends here" from "eve stopped showing it here".
"""

from __future__ import annotations

import codecs

#: read_file shows at most this much of a file per call
READ_MAX_BYTES = 256 * 1024
#: read_file scans at most this much of a file per call to find ``offset_line``: showing a
#: slice never costs reading a whole multi-GiB file (ReadOffsetTooFar past it)
READ_SCAN_MAX_BYTES = 64 * 1024 * 1024
#: write_file refuses content over this much (as UTF-8) before touching the disk: more than
#: any model writes in one call, far less than a loop of calls could fill a disk with
WRITE_MAX_BYTES = 1024 * 1024
#: bash keeps at most this much of stdout and of stderr each
OUTPUT_MAX_BYTES = 64 * 1024
#: list_files names at most this many entries
LIST_MAX_ENTRIES = 1000


def decode_text(data: bytes, *, cut: bool) -> str:
    """UTF-8 text of ``data`` with invalid bytes replaced.

    When ``cut`` is true the bytes were sliced out of something longer, so a multi-byte
    character split at the end is dropped instead of showing up as a replacement character.
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    # A non-final decode keeps an incomplete trailing sequence buffered: exactly the drop.
    return decoder.decode(data, final=not cut)


def truncation_note(shown: int, total: int, hint: str = "") -> str:
    """The line that ends a cut result: how much of how much was shown, and what to do."""
    return f"\n[truncated: showed {shown:,} of {total:,} bytes{'; ' + hint if hint else ''}]"


def capped_text(data: bytes, total: int, limit: int) -> str:
    """At most ``limit`` bytes of ``data`` as text; a note when ``total`` bytes were more."""
    if total <= limit:
        return decode_text(data, cut=False)
    return decode_text(data[:limit], cut=True) + truncation_note(limit, total)
