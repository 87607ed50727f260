"""A webhook's headers as Standard Webhooks has them (https://www.standardwebhooks.com/).

``webhook-id`` names the message, the same on every try of it, so a receiver that keeps the
ids it took drops a repeat; ``webhook-timestamp`` is the try's time in Unix seconds, so a
receiver refuses an old one (a replay); ``webhook-signature`` is ``v1,`` and the base64
HMAC-SHA256 of ``<id>.<timestamp>.<body>`` under the secret, one per secret, space
separated, so a receiver rotating its secret accepts either. A secret is written as
Standard Webhooks writes them: ``whsec_`` and the key's bytes in base64.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac

#: what a secret starts with
SECRET_PREFIX = "whsec_"
#: a key shorter than this is refused: the spec asks for 24 to 64 bytes
MIN_KEY_BYTES = 24


def webhook_id(session_id: str, turn_id: str) -> str:
    """The message's id: one per run (its session and turn), so every try, and a replay
    of the run's workflow after a restart, sends the same one."""
    digest = hashlib.sha256(f"{session_id}\0{turn_id}".encode()).hexdigest()
    return f"msg_{digest[:32]}"


def parse_secrets(raw: str) -> list[bytes]:
    """The keys of ``raw``: one secret, or several separated by spaces (while a receiver
    rotates from one to the next). Raises ``ValueError`` saying what is wrong with it, never
    what it holds (the caller names the variable)."""
    keys = []
    for secret in raw.split():
        if not secret.startswith(SECRET_PREFIX):
            raise ValueError(f"a secret starts with {SECRET_PREFIX!r}")
        try:
            key = base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)
        except binascii.Error:
            raise ValueError(f"what follows {SECRET_PREFIX!r} is not base64") from None
        if len(key) < MIN_KEY_BYTES:
            raise ValueError(f"the key is {len(key)} bytes; it needs {MIN_KEY_BYTES} or more")
        keys.append(key)
    if not keys:
        raise ValueError("it is empty")
    return keys


def signature(keys: list[bytes], msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` header: ``v1,<base64 HMAC-SHA256>`` per key."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    return " ".join(
        "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
        for key in keys
    )
