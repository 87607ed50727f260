"""``agent/auth.py``'s ``authenticate`` as the server calls it: awaited, checked, contained.

Whatever the hook raises becomes ``AuthHookFailed`` (500), logged with the file, the line
and the exception's type only: an exception's text, or a traceback's locals, may hold the
credential the hook was reading. ``Unauthorized`` raised on purpose passes through (401).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import traceback

from starlette.requests import Request

from eve.auth import Principal
from eve.authoring.auth import AuthDefinition
from eve.errors import AuthHookFailed, Unauthorized
from eve.server.auth import AuthHook

log = logging.getLogger("eve.server")


def auth_hook(definition: AuthDefinition, *, source: str) -> AuthHook:
    """The hook of ``definition`` (from ``source``, e.g. ``agent/auth.py``)."""
    authenticate = definition.authenticate
    is_async = inspect.iscoroutinefunction(authenticate)

    async def call(request: Request) -> Principal | None:
        try:
            if is_async:
                answer = await authenticate(request)
            else:
                # a sync hook may block (a database, a file): not on the event loop
                answer = await asyncio.to_thread(authenticate, request)
            if inspect.isawaitable(answer):
                answer = await answer
        except Unauthorized:
            raise
        except Exception as error:
            raise _failed(source, error) from None
        if answer is None or isinstance(answer, Principal):
            return answer
        log.error("%s: authenticate returned %s", source, type(answer).__name__)
        raise AuthHookFailed(
            f"{source}: authenticate returned {type(answer).__name__}; it must return an "
            "eve.auth.Principal, or None to refuse the request",
            source=source,
        )

    return call


def _failed(source: str, error: Exception) -> AuthHookFailed:
    frames = traceback.extract_tb(error.__traceback__)
    where = f" at line {frames[-1].lineno} of {frames[-1].filename}" if frames else ""
    log.error("%s: authenticate raised %s%s", source, type(error).__name__, where)
    return AuthHookFailed(
        f"{source}: authenticate raised {type(error).__name__}; see the server log",
        source=source,
    )
