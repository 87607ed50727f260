"""A small client for an eve server's session API (``eve serve``), sync and async.

::

    from eve.client import EveClient

    with EveClient("http://127.0.0.1:8000") as client:
        accepted = client.create("What does a hammer cost?")
        for event in client.turn_events(accepted.session_id, accepted.turn_id):
            print(event.type)

Both clients build the same requests and read the same answers (``eve.client.calls``, over
the bodies of ``eve.wire``); only the I/O differs.
"""

from eve._session_summary import SessionLimits, SessionListEntry, SessionPage, SessionSummary
from eve.client.async_client import AsyncEveClient
from eve.client.protocol import TURN_END
from eve.client.sync_client import EveClient
from eve.errors import APIError, ClientError, ServerNotTrusted, ServerUnreachable
from eve.events import SessionEvent
from eve.wire.answers import Accepted

__all__ = [
    "TURN_END",
    "APIError",
    "Accepted",
    "AsyncEveClient",
    "ClientError",
    "EveClient",
    "ServerNotTrusted",
    "ServerUnreachable",
    "SessionEvent",
    "SessionLimits",
    "SessionListEntry",
    "SessionPage",
    "SessionSummary",
]
