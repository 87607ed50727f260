"""Where a scheduled run's answer goes once its turn ends: a webhook, POSTed as JSON.

The URL is read from the variable the schedule names (``webhook_url_env``), at delivery
time, and never logged, stored or put in an error: a webhook URL often is its own secret.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, assert_never

import httpx

from eve._redact import redact
from eve.errors import ScheduleDeliveryFailed
from eve.manifest import WebhookDelivery

#: how long one POST may take
TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True, kw_only=True)
class RunOutcome:
    """How a scheduled run's turn ended, and what the agent said in it."""

    name: str
    tick: str
    session_id: str
    turn_id: str
    #: ``completed``, ``failed`` or ``cancelled``
    status: str
    text: str
    error: str | None = None

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "schedule": self.name,
            "tick": self.tick,
            "sessionId": self.session_id,
            "turnId": self.turn_id,
            "status": self.status,
            "text": self.text,
        }
        if self.error is not None:
            body["error"] = self.error
        return body


async def deliver(
    delivery: WebhookDelivery,
    outcome: RunOutcome,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
) -> int:
    """Post ``outcome`` where ``delivery`` says; the HTTP status it was taken with.

    Raises ``ScheduleDeliveryFailed`` for an unset variable, an unreachable URL or an error
    status (the durable step that calls this retries it)."""
    match delivery:
        case WebhookDelivery():
            return await _post(delivery.url_env, outcome, transport)
        case _:
            assert_never(delivery)


async def _post(
    url_env: str, outcome: RunOutcome, transport: httpx.AsyncBaseTransport | None
) -> int:
    url = os.environ.get(url_env, "")
    if not url:
        raise ScheduleDeliveryFailed(
            f"schedule '{outcome.name}': ${url_env} is not set, so its answer has nowhere to "
            "go; set it to the webhook's URL",
            name=outcome.name,
            status=None,
        )
    try:
        async with httpx.AsyncClient(timeout=TIMEOUT_SECONDS, transport=transport) as client:
            response = await client.post(url, json=outcome.body())
    except httpx.HTTPError as error:
        raise ScheduleDeliveryFailed(
            f"schedule '{outcome.name}': the webhook in ${url_env} could not be reached "
            f"({type(error).__name__})",
            name=outcome.name,
            status=None,
        ) from None  # the error's text holds the URL
    if response.status_code >= 300:
        raise ScheduleDeliveryFailed(
            f"schedule '{outcome.name}': the webhook in ${url_env} answered "
            f"{response.status_code}: {redact(response.text[:200])}",
            name=outcome.name,
            status=response.status_code,
        )
    return response.status_code
