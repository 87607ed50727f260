"""``from_env``: a declared value that names an environment variable, read only at run time,
so a secret is never written into ``.eve/`` (MCP headers and ``env``, an OAuth client secret)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from eve.errors import AuthoringError

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True, kw_only=True)
class EnvValue:
    """A header value read from the environment variable ``name`` when connecting."""

    name: str
    #: written before the value (``"Bearer "``)
    prefix: str = ""


def from_env(name: str, *, prefix: str = "") -> EnvValue:
    """A header value taken from the environment variable ``name`` at connect time, so the
    secret is never written into ``.eve/``: ``headers={"X-Api-Key": from_env("DOCS_KEY")}``."""
    if not ENV_NAME.match(name):
        raise AuthoringError(f"from_env({name!r}): not an environment variable name")
    return EnvValue(name=name, prefix=prefix)
