"""Where a scheduled run's answer goes once its turn ends: a webhook, POSTed as JSON.

The URL is read from the variable the schedule names (``webhook_url_env``), at delivery
time, and never logged, stored or put in an error: a webhook URL often is its own secret.
Each POST carries Standard Webhooks' headers (``webhook_signing``): the same ``webhook-id``
on every try of a run's answer, so a receiver that drops an id it took gets it once.

One POST is one try (``post_once``): taken (2xx), worth another try later (no answer, 408,
429, 5xx: ``TryAgain``, with the receiver's ``Retry-After`` when it sent one), or refused
for good (any other status, an unset variable, a bad secret: ``ScheduleDeliveryFailed``).
The tick's workflow spaces the tries with durable sleeps (``tick.deliver_webhook``).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from eve._redact import redact
from eve._tls import shared_tls_context
from eve.errors import ScheduleDeliveryFailed
from eve.manifest import WebhookDelivery
from eve.schedules.webhook_signing import parse_secrets, signature, webhook_id

#: how long one POST may take
TIMEOUT_SECONDS = 10.0
#: the wait before each try after the first, when the receiver sends no Retry-After: six
#: tries over about three quarters of an hour
BACKOFF_SECONDS = (5.0, 30.0, 120.0, 600.0, 1800.0)
#: the longest a Retry-After is waited; a longer one is cut to this
MAX_RETRY_AFTER_SECONDS = 3600.0
#: statuses that say "not now" rather than "no": another try may be taken
RETRYABLE = frozenset({408, 425, 429})


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


@dataclass(frozen=True, kw_only=True)
class Taken:
    """The receiver took the answer."""

    status: int


@dataclass(frozen=True, kw_only=True)
class TryAgain:
    """The receiver did not take the answer, but a later try may be."""

    #: its HTTP status; None when nothing answered
    status: int | None
    #: the seconds its ``Retry-After`` asks to wait, when it sent one
    retry_after: float | None
    #: what happened, for the log (never the URL)
    why: str


async def post_once(
    delivery: WebhookDelivery,
    outcome: RunOutcome,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
) -> Taken | TryAgain:
    """One try of posting ``outcome`` where ``delivery`` says (see the module docstring).

    Raises ``ScheduleDeliveryFailed`` for an unset variable, a secret that is not one, or
    a refusal no later try would change."""
    url = _variable(delivery.url_env, outcome, "the webhook's URL")
    keys = _keys(delivery, outcome)
    body = json.dumps(outcome.body(), separators=(",", ":")).encode()
    msg_id = webhook_id(outcome.session_id, outcome.turn_id)
    stamp = int(time.time())
    headers = {"content-type": "application/json", "webhook-id": msg_id}
    headers["webhook-timestamp"] = str(stamp)
    if keys:
        headers["webhook-signature"] = signature(keys, msg_id, stamp, body)
    try:
        verify = shared_tls_context("httpx")
        async with httpx.AsyncClient(
            timeout=TIMEOUT_SECONDS, transport=transport, verify=verify
        ) as client:
            response = await client.post(url, content=body, headers=headers)
    except httpx.HTTPError as error:
        # the error's text holds the URL
        return TryAgain(status=None, retry_after=None, why=f"no answer ({type(error).__name__})")
    status = response.status_code
    if 200 <= status < 300:
        return Taken(status=status)
    said = f"answered {status}: {redact(response.text[:200])}"
    if status in RETRYABLE or status >= 500:
        waited = retry_after(response.headers.get("retry-after"), now=time.time())
        return TryAgain(status=status, retry_after=waited, why=said)
    raise ScheduleDeliveryFailed(
        f"schedule '{outcome.name}': the webhook in ${delivery.url_env} {said}",
        name=outcome.name,
        status=status,
    )


def retry_after(header: str | None, *, now: float) -> float | None:
    """A ``Retry-After`` in seconds from ``now`` (it is seconds, or an HTTP date), at most
    ``MAX_RETRY_AFTER_SECONDS``; None when absent or unreadable."""
    if header is None:
        return None
    text = header.strip()
    if text.isdigit():
        seconds = float(text)
    else:
        try:
            seconds = parsedate_to_datetime(text).timestamp() - now
        except (TypeError, ValueError):
            return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_SECONDS)


def next_wait(tried: TryAgain, attempt: int) -> float:
    """How long to wait after try ``attempt`` (1 for the first) before the next: the
    receiver's Retry-After when it sent one, else ``BACKOFF_SECONDS``."""
    if tried.retry_after is not None:
        return tried.retry_after
    return BACKOFF_SECONDS[min(attempt, len(BACKOFF_SECONDS)) - 1]


def _variable(name: str, outcome: RunOutcome, what: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        raise ScheduleDeliveryFailed(
            f"schedule '{outcome.name}': ${name} is not set, so its answer cannot be sent; "
            f"set it to {what}",
            name=outcome.name,
            status=None,
        )
    return value


def _keys(delivery: WebhookDelivery, outcome: RunOutcome) -> list[bytes]:
    if delivery.secret_env is None:
        return []  # unsigned: the schedule names no secret
    raw = _variable(delivery.secret_env, outcome, "the webhook's signing secret (whsec_…)")
    try:
        return parse_secrets(raw)
    except ValueError as error:
        raise ScheduleDeliveryFailed(
            f"schedule '{outcome.name}': ${delivery.secret_env} is not a webhook secret: "
            f"{error}; write it as whsec_ and the key in base64",
            name=outcome.name,
            status=None,
        ) from None
