"""Durable sessions on DBOS: the only package in eve that imports ``dbos``.

Internal: ``eve serve`` and ``eve.server`` run it; a program talks to a session through
``eve.client`` (docs/architecture.md, "The public surface").
"""

from eve.sessions.request_answers import Accepted
from eve.sessions.service import SessionService, new_session_id
from eve.sessions.settings import SessionSettings, resolve_settings
from eve.wire.requests import InputResponse

__all__ = [
    "Accepted",
    "InputResponse",
    "SessionService",
    "SessionSettings",
    "new_session_id",
    "resolve_settings",
]
