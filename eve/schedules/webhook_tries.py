"""A run's webhook delivery as the tick's workflow runs it: a try per durable step, a
durable sleep between tries, and a give-up the log names.

Each try (``delivery.post_once``) is a step of its own, so a worker that dies mid-delivery
is replaced by one that goes on from the last try recorded, waiting what remains of the
sleep, never from the start. Every try sends the same ``webhook-id``: a receiver that took
a try whose answer was lost (a timeout, a worker killed before the step was recorded) and
dedupes by id takes the answer once. That is the guarantee: at least once, with a stable
id, which is effectively once for a receiver that dedupes.

An eve before this one delivered in one step named ``schedule.deliver`` that DBOS retried
(as a channel delivery still is), and DBOS refuses to replay a recorded step under another
name. So a tick whose workflow recorded that step (its worker stopped after the delivery,
before the tick's end) replays it under that name, answered from its record: delivered, or
given up on, as it was then (``delivered_in_one_step``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import assert_never

from dbos import DBOS
from dbos._dbos import _get_dbos_instance

from eve.errors import ScheduleDeliveryFailed, WebhookDeliveryGaveUp
from eve.manifest import WebhookDelivery
from eve.schedules.delivery import RunOutcome, Taken, TryAgain, next_wait, post_once
from eve.schedules.webhook_signing import webhook_id

log = logging.getLogger("eve.schedules")

#: how many times a run's answer is POSTed before the delivery gives up
WEBHOOK_ATTEMPTS = 6
#: the step a channel delivery runs in (DBOS retrying it), and a webhook's did before
#: ``schedule.webhook``
ONE_STEP = "schedule.deliver"


async def delivered_in_one_step(workflow_id: str | None) -> bool:
    """Whether the tick ``workflow_id`` recorded a webhook delivery as an older eve ran it:
    one ``ONE_STEP`` step. Read from DBOS's table around ``DBOS.list_workflow_steps``,
    which, called in a workflow, would be a step of it and move the ids of the steps after
    it; the same answer on every replay, as the record never changes."""
    if workflow_id is None:
        return False

    def names() -> list[str]:
        sys_db = _get_dbos_instance()._sys_db
        steps = sys_db.list_workflow_steps(workflow_id, load_output=False)
        return [step["function_name"] for step in steps]

    return ONE_STEP in await asyncio.to_thread(names)


async def post_or_raise(delivery: WebhookDelivery, outcome: RunOutcome) -> None:
    """One try as an older eve's one-step delivery made it, its "not now" raised so DBOS
    tries the step again. Replayed, DBOS answers from the record and runs nothing."""
    tried = await post_once(delivery, outcome)
    if isinstance(tried, TryAgain):
        msg_id = webhook_id(outcome.session_id, outcome.turn_id)
        raise WebhookDeliveryGaveUp(
            f"schedule '{outcome.name}': the webhook in ${delivery.url_env} did not take "
            f"message {msg_id}: {tried.why}",
            name=outcome.name,
            status=tried.status,
            webhook_id=msg_id,
            attempts=1,
        )


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
