"""eve._redact: known secrets in every spelling, key shapes glued to words, nothing else touched."""

from __future__ import annotations

import base64
from urllib.parse import quote

import pytest

from eve._redact import REDACTED, add_secret, redact

SECRET = "s3cr3t/Value+with=odd&chars"


def test_a_known_secret_is_redacted_as_written() -> None:
    assert redact(f"got {SECRET}!", secrets=(SECRET,)) == f"got {REDACTED}!"


def test_a_known_secret_is_redacted_url_encoded() -> None:
    assert SECRET not in quote(SECRET, safe="")  # the encoding really changes it
    assert quote(SECRET, safe="") not in redact(f"u={quote(SECRET, safe='')}", secrets=(SECRET,))


@pytest.mark.parametrize("before", [b"", b"x", b"xy", b"prefix: ", b"\x00\xff"])
@pytest.mark.parametrize("after", [b"", b"z", b"\n", b"tail bytes"])
@pytest.mark.parametrize("encode", [base64.b64encode, base64.urlsafe_b64encode])
def test_a_known_secret_is_redacted_inside_base64_at_any_alignment(
    before: bytes, after: bytes, encode: object
) -> None:
    assert callable(encode)
    blob = encode(before + SECRET.encode() + after).decode()
    redacted = redact(f"out: {blob}", secrets=(SECRET,))
    assert REDACTED in redacted
    # what is left cannot be decoded back to the secret
    leftover = redacted.replace(REDACTED, "")
    assert SECRET[:8] not in leftover


@pytest.mark.parametrize(
    "text",
    [
        "xsk-ant-api03-AbCdEfGh0123456789",  # finding 5: glued to a letter
        "key=sk-AbCdEfGh0123456789",  # finding 5: after '='
        "Authorization: Bearer sk-proj-AbCdEfGh0123456789",
        "tokensk-proj-AbCdEfGh0123456789",
        "sk-AbCdEfGh0123456789 at the very start",  # a bare key: nothing before it
        "(sk-AbCdEfGh0123456789)",
        "ask-admin-AbCdEfGh0123456789",
    ],
)
def test_key_shapes_are_redacted_even_glued_to_a_word(text: str) -> None:
    redacted = redact(text)
    assert REDACTED in redacted
    assert "AbCdEfGh" not in redacted


@pytest.mark.parametrize(
    "text",
    [
        "ses_J9a8:turn-0:task-0-call_0_123456789",  # a task id: 'sk-' inside a word
        "a risk-assessment report",
        "disk-usage-statistics",
    ],
)
def test_ordinary_words_containing_sk_dash_are_left_alone(text: str) -> None:
    assert redact(text) == text


def test_short_values_are_not_secrets() -> None:
    assert redact("a b c abc", secrets=("abc",)) == "a b c abc"


def test_a_secret_variable_counts_from_when_it_is_set_until_it_is_unset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from eve._redact import known_secrets

    monkeypatch.setenv("GEMINI_API_KEY", "gm-secret-value-1")
    assert "gm-secret-value-1" in known_secrets()
    assert redact("key gm-secret-value-1 here") == "key [redacted] here"
    # redact keeps the spellings it made while nothing they were made from changes: a new
    # value, an unset variable and a newly declared secret each count at once
    monkeypatch.setenv("GEMINI_API_KEY", "gm-secret-value-2")
    assert redact("gm-secret-value-1 gm-secret-value-2") == "gm-secret-value-1 [redacted]"
    monkeypatch.delenv("GEMINI_API_KEY")
    assert "gm-secret-value-1" not in known_secrets()
    assert redact("key gm-secret-value-2 here") == "key gm-secret-value-2 here"
    add_secret("declared-later-value")
    assert redact("a declared-later-value") == "a [redacted]"
