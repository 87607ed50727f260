"""Asking a person about a crossed session limit from a turn workflow (``session-limit``).

The same desk as approvals and questions (``input_requests``): the request is opened in
the store with its two options, published as ``input.requested``, and answered exactly
once through the workflow's durable messages, so a raise or an end survives a restart.
"""

from __future__ import annotations

from eve._cancellation import CancelSignal
from eve.events import Option, SessionLimitRequest
from eve.execution.limits import LimitCrossed, LimitDecision
from eve.sessions.input_requests import InputDesk, request_id_for
from eve.sessions.mailbox import Mailbox

RAISE: LimitDecision = "raise"
END: LimitDecision = "end"
LIMIT_OPTION_IDS: list[str] = [RAISE, END]


class DurableLimits:
    """A ``LimitHook`` that parks the turn until someone answers over the session API."""

    def __init__(self, desk: InputDesk, signal: CancelSignal) -> None:
        self.desk = desk
        self.mailbox = Mailbox(signal=signal)

    async def __call__(self, crossing: LimitCrossed) -> LimitDecision | None:
        # one question per limit, step and raise: a replay asks the same one again
        asker = f"limit:{crossing.limit}:{crossing.step}:{crossing.times_raised}"
        entry = SessionLimitRequest(
            request_id=request_id_for(self.desk.workflow_id, asker),
            options=[
                Option(id=RAISE, label=f"Raise by {crossing.raise_by}"),
                Option(id=END, label="End the session"),
            ],
            limit=crossing.limit,
            used=crossing.used,
            allowed=crossing.allowed,
            raise_by=crossing.raise_by,
            usage=crossing.spend.usage,
            cost=crossing.spend.cost,
        )
        option = await self.desk.ask(entry, LIMIT_OPTION_IDS, self.mailbox.answer)
        if option is None:
            return None
        return RAISE if option == RAISE else END
