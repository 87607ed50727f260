"""Custom auth: ``define_auth(authenticate)`` in ``agent/auth.py`` (the root agent only).

``authenticate(request)`` (sync or async) gets the Starlette request of every call the
server's own schemes (the shared token, a verified JWT) did not accept, and returns the
``Principal`` it proves, or None to refuse it (401).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from eve.authoring._caller import caller_module
from eve.errors import AuthoringError

#: ``authenticate(request) -> Principal | None``, sync or async
Authenticate = Callable[[Any], Any]


@dataclass(frozen=True, kw_only=True)
class AuthDefinition:
    """A custom auth scheme as authored in ``agent/auth.py``."""

    authenticate: Authenticate
    #: the module whose code made this definition (see the export rule)
    defined_in: str | None = None


def define_auth(authenticate: Authenticate) -> AuthDefinition:
    """Define how the server learns who asks when no built-in scheme does.

    Raises ``AuthoringError`` when ``authenticate`` is not a function of one argument, the
    request.
    """
    if not callable(authenticate) or inspect.isasyncgenfunction(authenticate):
        raise AuthoringError(
            "define_auth(authenticate) takes a function of the request returning a Principal "
            f"or None, not {type(authenticate).__name__}"
        )
    try:
        inspect.signature(authenticate).bind(object())
    except TypeError:
        raise AuthoringError(
            "define_auth: authenticate must accept exactly one argument, the request "
            "(def authenticate(request): ...)"
        ) from None
    except ValueError:
        pass  # a builtin without a signature: trust it
    return AuthDefinition(authenticate=authenticate, defined_in=caller_module())
