"""What a session request that changes something was answered with (``Accepted``): the
service's answer to a create, a message or an answer, as it is kept for an
``Idempotency-Key`` and as the HTTP API sends it."""

from __future__ import annotations

from dataclasses import dataclass

from eve.sessions.idempotency import Answer
from eve.wire.answers import Accepted as WireAccepted


@dataclass(frozen=True, kw_only=True)
class Accepted:
    """What a create, message or answer request was answered with."""

    session_id: str
    turn_id: str | None
    #: ``accepted`` (a turn was queued or a session made) or ``resolved`` (answers taken)
    status: str = "accepted"
    #: a repeat of an earlier request with the same ``Idempotency-Key``: nothing was done
    replayed: bool = False
    #: a fork's source (``status`` is ``forked``, ``session_id`` the new session)
    forked_from: str | None = None

    def answer(self) -> Answer:
        return {"sessionId": self.session_id, "turnId": self.turn_id, "status": self.status}

    def wire(self) -> WireAccepted:
        """What the HTTP API answers with (``eve.wire.answers``)."""
        return WireAccepted(
            session_id=self.session_id,
            status=self.status,
            turn_id=self.turn_id,
            forked_from=self.forked_from,
        )

    @classmethod
    def replay(cls, answer: Answer) -> Accepted:
        return cls(
            session_id=str(answer["sessionId"]),
            turn_id=answer.get("turnId"),
            status=str(answer.get("status") or "accepted"),
            replayed=True,
        )
