"""Query text into search terms: the words of a question, without punctuation or stop words.

Full-text engines parse their own query languages (FTS5 ``MATCH``, ``to_tsquery``); a
model's question is not written in either, so it becomes a plain OR of its words here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
#: words every question has; matching on them ranks nothing
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "do",
        "does",
        "did",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "that",
        "the",
        "their",
        "them",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)
MAX_TERMS = 32


def terms(text: str) -> list[str]:
    """The distinct words of ``text``, lower-cased, in order, stop words dropped."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        if word not in STOP_WORDS:
            seen.setdefault(word, None)
    return list(seen)[:MAX_TERMS]


def fts5_query(words: Sequence[str]) -> str:
    """An FTS5 ``MATCH`` of any of ``words``, each quoted (no operator reaches FTS5)."""
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def tsquery(words: Sequence[str]) -> str:
    """A ``to_tsquery`` text of any of ``words`` (letters and digits only, so it parses)."""
    return " | ".join(words)


def overlap_score(
    query: Sequence[str], text: str, *, documents: int, frequency: dict[str, int]
) -> float:
    """A BM25-like score of ``text`` for ``query`` (the file provider's ranking):
    rarer words count more, and a word counts once per entry."""
    found = set(terms(text))
    score = 0.0
    for word in query:
        if word in found or any(w.startswith(word) for w in found):
            score += math.log(1 + documents / (1 + frequency.get(word, 0)))
    return score
