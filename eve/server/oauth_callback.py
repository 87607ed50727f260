"""``GET /eve/v1/oauth/callback``: where an authorization server sends a person back after an
MCP connection's sign-in (``eve.connections.oauth_client``).

The route is anonymous, as a browser's redirect carries no eve credential: what proves the
request is its ``state``, 32 random bytes only the link's holder knows, which one waiting
sign-in of this process expects (``connections.authorization``). The turn waiting in it
exchanges the code and goes on; this page only says so.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from eve.connections import authorization
from eve.server.answers import answer
from eve.wire.answers import SignedIn

SIGNED_IN = "Signed in: eve goes on. You can close this tab."


async def oauth_callback(request: Request) -> Response:
    """Hand the callback to the sign-in waiting for its state (``OAuthCallbackInvalid``,
    400, when none does)."""
    authorization.complete(authorization.callback_of(dict(request.query_params)))
    # JSON like every answer of the API (a browser shows it as it is)
    return answer(SignedIn(message=SIGNED_IN))
