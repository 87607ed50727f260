"""Keep secrets out of every message eve prints, logs or stores.

Two nets. The values of the secret variables (``SECRET_ENV_VARS``, plus any a caller
names) are replaced wherever they appear: as written, URL-encoded, and base64-encoded at
any alignment (so ``echo $KEY | base64`` inside a longer blob is still caught). And
anything shaped like a provider key is replaced even if it never passed through our
environment — also glued to the word before it (``xsk-ant-…``, ``key=sk-…``).
"""

from __future__ import annotations

import base64
import logging
import os
import re
from functools import lru_cache
from typing import Any
from urllib.parse import quote, quote_plus

#: environment variables whose values are secrets wherever they appear
SECRET_ENV_VARS = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "EVE_API_TOKEN",
    # AWS (bedrock/): the access key id is not a secret, the rest are
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
)

# Provider key shapes, so a key that never passed through our environment is still caught.
# A prefixed shape (Anthropic's sk-ant-, OpenAI's sk-proj-, sk-svcacct-, sk-admin-) is
# caught anywhere, even glued to a letter; a bare ``sk-`` only where no letter or digit
# comes before it, or ids such as ``task-0-call_0_123456789`` would be mangled. The
# pattern starts with its literal ``sk-`` (the bare shape's look back comes after it), so
# the regex engine skips to each ``sk-`` rather than trying both shapes at every
# character: twenty times faster, and every event, record and checkpoint goes through it.
_KEY_PATTERN = re.compile(
    r"sk-(?:(?:ant|proj|svcacct|admin)-[A-Za-z0-9_\-]{8,}"
    r"|(?<![A-Za-z0-9]sk-)[A-Za-z0-9_\-]{8,})"
)

REDACTED = "[redacted]"
#: shorter values are not treated as secrets: replacing them would garble ordinary text
_MIN_SECRET = 8


#: secrets the process learned at run time (an MCP connection's header values from the
#: environment, its ``get_token`` results): redacted like the variables above from then on
_declared: set[str] = set()


def add_secret(value: str) -> None:
    """Redact ``value`` everywhere from now on (short values are ignored, as below)."""
    if len(value) >= _MIN_SECRET:
        _declared.add(value)


def _secret_env_values() -> list[str]:
    """The secret variables' current values. Read from ``os.environ``'s own dict when it
    has one (CPython's): ``os.environ.get`` raises and catches an exception for each unset
    variable, and this runs for every redacted text (bench/mcp_call)."""
    environ: Any = os.environ
    data, encode, decode = (getattr(environ, n, None) for n in _ENVIRON_PARTS)
    if not isinstance(data, dict) or encode is None or decode is None:
        return [os.environ.get(name, "") for name in SECRET_ENV_VARS]
    return [decode(value) for name in SECRET_ENV_VARS if (value := data.get(encode(name)))]


_ENVIRON_PARTS = ("_data", "encodekey", "decodevalue")


def known_secrets(extra: tuple[str, ...] = ()) -> list[str]:
    found = {v for v in (*_secret_env_values(), *_declared, *extra) if len(v) >= _MIN_SECRET}
    return sorted(found, key=len, reverse=True)


def _base64_fragments(secret: bytes) -> set[str]:
    """The base64 text that ``secret`` becomes at each of the three byte alignments.

    Only the characters made of the secret's bits alone are kept: the ones at either end
    also carry bits of whatever surrounds it in the encoded blob.
    """
    fragments: set[str] = set()
    for shift in range(3):
        encoded = base64.b64encode(bytes(shift) + secret).decode()
        # the first characters mix in the shift's zero bytes; the last ones the bytes after
        first = (0, 2, 3)[shift]
        total = shift + len(secret)
        last = total // 3 * 4 + (0, 1, 2)[total % 3]
        core = encoded[first:last]
        if len(core) >= _MIN_SECRET:
            fragments.add(core)
            fragments.add(core.replace("+", "-").replace("/", "_"))  # the URL-safe alphabet
    return fragments


def _spellings(secret: str) -> set[str]:
    """``secret`` as written, URL-encoded and base64-encoded."""
    return {secret, quote(secret, safe=""), quote_plus(secret)} | _base64_fragments(secret.encode())


@lru_cache(maxsize=16)
def _all_spellings(secrets: tuple[str, ...]) -> tuple[str, ...]:
    # cached: redact runs on every tool result, event and record, and the secrets rarely
    # change, while their base64 spellings cost more than the replacing (bench/mcp_call)
    spellings = {s for secret in secrets for s in _spellings(secret)}
    return tuple(sorted(spellings, key=len, reverse=True))


#: the spellings to replace, and what they were made from: the secret variables' raw
#: values, how many secrets were declared (``_declared`` only grows) and the caller's
_memo: tuple[object, tuple[str, ...]] = ((), ())
#: the secret variables' names as keys of ``os.environ``'s own dict, encoded once
_env_keys: tuple[object, ...] | None = None


def _current_spellings(secrets: tuple[str, ...]) -> tuple[str, ...]:
    # redact runs on every tool result, event and record: while nothing it is made from
    # changed, the spellings are the last ones, without decoding, sorting and hashing the
    # secrets again (bench/mcp_call)
    global _memo, _env_keys
    environ: Any = os.environ
    data = getattr(environ, "_data", None)
    if _env_keys is None:
        encode = getattr(environ, "encodekey", None)
        _env_keys = tuple(map(encode, SECRET_ENV_VARS)) if encode is not None else ()
    raw: object = (
        # os.environ's own dict (CPython's), as in _secret_env_values
        tuple(map(data.get, _env_keys))
        if isinstance(data, dict) and _env_keys
        else tuple(map(os.environ.get, SECRET_ENV_VARS))
    )
    key = (raw, len(_declared), secrets)
    made_from, spellings = _memo
    if made_from != key:
        spellings = _all_spellings(tuple(known_secrets(secrets)))
        _memo = (key, spellings)
    return spellings


def redact(text: str, *, secrets: tuple[str, ...] = ()) -> str:
    """``text`` with every known secret and anything shaped like a provider key replaced."""
    return _replaced(text, _current_spellings(secrets))


def _replaced(text: str, spellings: tuple[str, ...]) -> str:
    for spelling in spellings:
        text = text.replace(spelling, REDACTED)
    return _KEY_PATTERN.sub(REDACTED, text)


#: joins a batch's texts for one pass of ``redact_all``: a NUL, which no JSON text holds
#: raw and no secret variable can (the environment's values are C strings)
_JOIN = "\x00"


def redact_all(texts: list[str], *, secrets: tuple[str, ...] = ()) -> list[str]:
    """Each of ``texts`` redacted as ``redact`` would, in one pass over them all.

    The event log redacts each batch of rows this way: the spellings are looked up once a
    batch rather than once a row, and each is replaced in one call over the joined texts.
    Joined by a character that no text and no spelling holds, the texts come apart again
    exactly as they would have been redacted one by one: no replacement can span the join
    (no spelling, nor ``[redacted]``, nor a key shape's characters, holds it), and a key
    shape's look back sees the join where it saw a text's start, neither a letter nor a
    digit. If a text or a spelling holds the join, each text is redacted alone.
    """
    spellings = _current_spellings(secrets)
    if len(texts) < 2:
        return [_replaced(text, spellings) for text in texts]
    joined = _JOIN.join(texts)
    if joined.count(_JOIN) != len(texts) - 1 or not _joinable(spellings):
        return [_replaced(text, spellings) for text in texts]
    return _replaced(joined, spellings).split(_JOIN)


#: the last spellings ``_joinable`` looked at (``_current_spellings`` hands out the same
#: tuple while nothing changed), and its answer
_joinable_memo: tuple[tuple[str, ...], bool] = ((), True)


def _joinable(spellings: tuple[str, ...]) -> bool:
    """Whether no spelling holds the join (a declared secret may hold any character)."""
    global _joinable_memo
    seen, answer = _joinable_memo
    if seen is not spellings:
        answer = not any(_JOIN in spelling for spelling in spellings)
        _joinable_memo = (spellings, answer)
    return answer


class RedactingFilter(logging.Filter):
    """Rewrites a record's message with every known secret redacted (a library's own log:
    DBOS's, the MCP SDK's)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact(record.getMessage())
        record.args = None
        if record.exc_info:
            # a traceback can quote the value too: keep its text, redacted, not the objects
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True
