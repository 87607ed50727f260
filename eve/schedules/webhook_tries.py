"""A run's webhook delivery as the tick's workflow runs it: a try per durable step, a
durable sleep between tries, and a give-up the log names.

Each try (``delivery.post_once``) is a step of its own, so a worker that dies mid-delivery
is replaced by one that goes on from the last try recorded, waiting what remains of the
sleep, never from the start. Every try sends the same ``webhook-id``: a receiver that took
a try whose answer was lost (a timeout, a worker killed before the step was recorded) and
dedupes by id takes the answer once. That is the guarantee: at least once, with a stable
id, which is effectively once for a receiver that dedupes.
"""

from __future__ import annotations

import logging
from typing import assert_never

from dbos import DBOS

from eve.errors import ScheduleDeliveryFailed, WebhookDeliveryGaveUp
from eve.manifest import WebhookDelivery
from eve.schedules.delivery import RunOutcome, Taken, TryAgain, next_wait, post_once
from eve.schedules.webhook_signing import webhook_id

log = logging.getLogger("eve.schedules")

#: how many times a run's answer is POSTed before the delivery gives up
WEBHOOK_ATTEMPTS = 6


async def deliver_webhook(delivery: WebhookDelivery, outcome: RunOutcome) -> int:
    """Post ``outcome`` until the receiver takes it: the status it was taken with.

    Raises ``ScheduleDeliveryFailed`` at once for a refusal no try would change (an unset
    variable, a 4xx) and ``WebhookDeliveryGaveUp`` once ``WEBHOOK_ATTEMPTS`` tries met no
    answer or a "not now"; each is logged once, naming the schedule and the session."""
    msg_id = webhook_id(outcome.session_id, outcome.turn_id)
    for attempt in range(1, WEBHOOK_ATTEMPTS + 1):
        try:
            tried = await DBOS.run_step_async(
                {"name": "schedule.webhook"}, post_once, delivery, outcome
            )
        except ScheduleDeliveryFailed as refused:
            _gave_up(outcome, msg_id, attempt, refused)
            raise
        match tried:
            case Taken(status=status):
                return status
            case TryAgain() if attempt < WEBHOOK_ATTEMPTS:
                wait = next_wait(tried, attempt)
                log.warning(
                    "schedule %s: webhook %s, try %d of %d: %s; trying again in %gs",
                    outcome.name,
                    msg_id,
                    attempt,
                    WEBHOOK_ATTEMPTS,
                    tried.why,
                    wait,
                )
                await DBOS.sleep_async(wait)
            case TryAgain():
                error = WebhookDeliveryGaveUp(
                    f"schedule '{outcome.name}': the webhook in ${delivery.url_env} did not "
                    f"take message {msg_id} in {attempt} tries; the last {tried.why}",
                    name=outcome.name,
                    status=tried.status,
                    webhook_id=msg_id,
                    attempts=attempt,
                )
                _gave_up(outcome, msg_id, attempt, error)
                raise error
            case _:
                assert_never(tried)
    raise AssertionError("the last try either returns or raises")


def _gave_up(outcome: RunOutcome, msg_id: str, attempts: int, error: Exception) -> None:
    log.warning(
        "schedule %s: the answer of session %s was not delivered (webhook %s, %d tries): %s: %s",
        outcome.name,
        outcome.session_id,
        msg_id,
        attempts,
        type(error).__name__,
        error,
    )
