"""eve._redact: known secrets in every spelling, key shapes glued to words, nothing else touched."""

from __future__ import annotations

import base64
from urllib.parse import quote

import pytest

from eve._redact import REDACTED, add_secret, redact, redact_all

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


#: rows as the event log redacts them together: secrets in each spelling, key shapes at a
#: row's start and end (where the join meets them), rows with nothing to redact
BATCH = [
    f'{{"text":"{SECRET}"}}',
    "sk-AbCdEfGh0123456789 starts this row",
    "this row ends with a key: sk-proj-AbCdEfGh0123456789",
    f"u={quote(SECRET, safe='')}",
    "out: " + base64.b64encode(b"x" + SECRET.encode()).decode(),
    "ses_J9a8:turn-0:task-0-call_0_123456789",
    "",
    "nothing here",
    f"{SECRET}{SECRET}",
]


def test_a_batch_is_redacted_as_each_of_its_texts_alone() -> None:
    batch = redact_all(BATCH, secrets=(SECRET,))
    assert batch == [redact(text, secrets=(SECRET,)) for text in BATCH]
    # and that is redacted: every row that held a secret or a key holds neither now
    for before, after in zip(BATCH, batch, strict=True):
        assert SECRET not in after and SECRET[:8] not in after.replace(REDACTED, "")
        assert "AbCdEfGh" not in after
        assert (after == before) == (before in ("", "nothing here") or "task-0" in before)


def test_the_join_neither_hides_a_texts_start_nor_glues_two_texts_together() -> None:
    # a bare key is caught only where no letter comes before it: after the text before it
    # ends, it is at a text's start; and one text's end and the next one's start are no key
    texts = ["xyz", "sk-AbCdEfGh0123456789", "sk", "-AbCdEfGh0123456789", "sk-", "AbCdEfGh01"]
    batch = redact_all(texts)
    assert batch == [redact(text) for text in texts]
    assert batch[:2] == ["xyz", REDACTED]
    assert batch[2:] == texts[2:]


@pytest.mark.parametrize(
    "texts",
    [
        [f"a\x00{SECRET}", "b", f"{SECRET}\x00c"],  # a text holds the join
        ["\x00", "\x00\x00", SECRET],
    ],
)
def test_texts_that_hold_the_join_are_redacted_each_alone(texts: list[str]) -> None:
    batch = redact_all(texts, secrets=(SECRET,))
    assert len(batch) == len(texts)
    assert batch == [redact(text, secrets=(SECRET,)) for text in texts]
    assert all(SECRET not in text for text in batch)


def test_a_secret_that_holds_the_join_is_not_found_across_two_texts() -> None:
    # a declared secret is any string: one holding a NUL, replaced in the joined texts,
    # would match one text's end and the next one's start, and merge the two
    secret = "left-half\x00right-half"
    texts = ["one left-half", "right-half two"]
    assert redact_all(texts, secrets=(secret,)) == texts


def test_an_empty_batch_and_a_batch_of_one() -> None:
    assert redact_all([]) == []
    assert redact_all([f"a {SECRET}"], secrets=(SECRET,)) == [f"a {REDACTED}"]


def test_a_batch_counts_a_secret_variable_set_since_the_last_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the spellings are looked up once a batch: a variable set between two batches counts
    # in the second
    assert redact_all(["gm-batch-value-1"]) == ["gm-batch-value-1"]
    monkeypatch.setenv("GEMINI_API_KEY", "gm-batch-value-1")
    assert redact_all(["x gm-batch-value-1", "gm-batch-value-1 y"]) == [
        "x [redacted]",
        "[redacted] y",
    ]
