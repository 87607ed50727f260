"""Where an ``MCPError`` came from: the server's answer, or the SDK's own stand-in.

The SDK raises one exception type for both: an error the server sent in a JSON-RPC
response, and the errors it makes up itself when the transport fails (``-32000``
"Connection closed") or its clock runs out (``-32001``). The codes alone cannot tell them
apart (a server may answer ``-32000`` for its own reasons), so the origin is read from what
only the transport's failure leaves behind: the session's dispatcher is closed, the
request's timeout had really elapsed, the HTTP server answered 404 to our session id.
Whether a tool call may be sent again depends on it (``connections.pool``).
"""

from __future__ import annotations

import enum
from typing import Any

import mcp_types
from mcp import ClientSession
from mcp.shared.exceptions import MCPError

#: what the Streamable HTTP transport answers for a request whose SSE stream ended
#: without its response (the request was sent: the server may have run it)
_STREAM_ENDED = "SSE stream ended without a response"

#: JSON-RPC's standard codes, named in messages so a reader need not look them up
STANDARD_CODES = {
    mcp_types.PARSE_ERROR: "parse error",
    mcp_types.INVALID_REQUEST: "invalid request",
    mcp_types.METHOD_NOT_FOUND: "method not found",
    mcp_types.INVALID_PARAMS: "invalid params",
    mcp_types.INTERNAL_ERROR: "internal error",
}


class Origin(enum.Enum):
    #: the server answered with this error: never retried
    SERVER = "server"
    #: the transport closed while the request was out: the server may have got it
    CLOSED = "closed"
    #: the SDK's clock ran out before an answer came
    TIMEOUT = "timeout"
    #: the HTTP server answered 404 to our session id: it ended the session and did not
    #: process the request, so a new session may send it again
    EXPIRED = "expired"


def session_closed(session: ClientSession) -> bool:
    """Whether the session's transport has closed (EOF from a stdio server, the HTTP
    stream torn down). The SDK keeps this on its dispatcher and exposes no accessor; a
    closed dispatcher refuses a request before writing it."""
    dispatcher: Any = getattr(session, "_dispatcher", None)
    return bool(getattr(dispatcher, "_closed", False))


def origin(
    error: MCPError,
    *,
    session: ClientSession,
    expired: bool,
    elapsed: float,
    timeout: float,
) -> Origin:
    """The origin of ``error``, raised by a request on ``session`` that took ``elapsed``
    seconds with ``timeout`` as the SDK's read timeout."""
    if expired:
        return Origin.EXPIRED
    transport_closed = session_closed(session) or error.message == _STREAM_ENDED
    if error.code == mcp_types.CONNECTION_CLOSED and error.data is None and transport_closed:
        return Origin.CLOSED
    if error.code == mcp_types.REQUEST_TIMEOUT and elapsed >= timeout:
        # the SDK's clock cannot run out early: a -32001 before the timeout is the server's
        return Origin.TIMEOUT
    return Origin.SERVER


def described(error: MCPError) -> str:
    """``error`` as the server sent it, its code named: ``-32602 (invalid params): …``."""
    code = error.code
    if code in STANDARD_CODES:
        kind = STANDARD_CODES[code]
    elif -32099 <= code <= -32000:
        kind = "server-defined"
    else:
        kind = "application-defined"
    return f"JSON-RPC error {code} ({kind}): {error.message}"
