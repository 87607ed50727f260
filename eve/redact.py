"""Keep secrets out of every message eve prints, logs or stores."""

from __future__ import annotations

import os
import re

#: environment variables whose values are secrets wherever they appear
SECRET_ENV_VARS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "EVE_API_TOKEN")

# Provider key shapes, so a key that never passed through our environment is still caught.
_KEY_PATTERN = re.compile(r"\b(sk-[A-Za-z0-9_\-]{8,}|sk-ant-[A-Za-z0-9_\-]{8,})")

REDACTED = "[redacted]"


def known_secrets(extra: tuple[str, ...] = ()) -> list[str]:
    values = [os.environ.get(name, "") for name in SECRET_ENV_VARS]
    return sorted({v for v in (*values, *extra) if len(v) >= 8}, key=len, reverse=True)


def redact(text: str, *, secrets: tuple[str, ...] = ()) -> str:
    """``text`` with every known secret and anything shaped like a provider key replaced."""
    for secret in known_secrets(secrets):
        text = text.replace(secret, REDACTED)
    return _KEY_PATTERN.sub(REDACTED, text)
