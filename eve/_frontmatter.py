"""Markdown front matter: the ``---`` block of ``key: value`` lines at the top of a skill.

Shared by discovery (which reads the description) and the ``eve__skill`` tool (which
strips it from the body), so both read a skill file the same way.
"""

from __future__ import annotations


class FrontMatterError(ValueError):
    """The front matter block is missing, unterminated or has a malformed line."""


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def parse_front_matter(text: str) -> tuple[dict[str, str], str]:
    """Split ``text`` into its front matter (flat ``key: value`` pairs) and its body.

    Only flat string values are supported, which is all a skill needs; anything richer is
    rejected rather than half-read.
    """
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise FrontMatterError("no front matter (the file must start with a '---' line)")
    meta: dict[str, str] = {}
    for number, line in enumerate(lines[1:], start=2):
        if line.strip() == "---":
            return meta, "\n".join(lines[number:]).strip("\n") + "\n"
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition(":")
        if not sep or not key.strip() or key != key.strip():
            raise FrontMatterError(f"line {number} of the front matter is not 'key: value'")
        meta[key.strip()] = _unquote(value.strip())
    raise FrontMatterError("the front matter is not closed by a '---' line")
