"""A ``.py`` schedule's ``run(ctx)`` (sync, async, skipping, failing) and the webhook post:
signed as Standard Webhooks signs, tried again when the receiver says "not now", each
failure a named error; the URL never appears in one."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from email.utils import formatdate

import httpx
import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from eve.authoring.schedules import ScheduleContext
from eve.errors import ScheduleDeliveryFailed, ScheduleRunFailed
from eve.manifest import ScheduleEntry, WebhookDelivery
from eve.schedules.delivery import (
    RunOutcome,
    Taken,
    TryAgain,
    next_wait,
    post_once,
    retry_after,
)
from eve.schedules.resolved import ResolvedSchedule
from eve.schedules.webhook_signing import webhook_id

CONTEXT = ScheduleContext(name="job", tick=datetime(2026, 1, 5, 9, tzinfo=UTC))
ENTRY = ScheduleEntry(
    name="job", logical_path="agent/schedules/job.py", source_id="schedules/job.py",
    cron="0 9 * * *", has_run=True,
)  # fmt: skip
OUTCOME = RunOutcome(
    name="job", tick="t", session_id="ses_x", turn_id="turn_0", status="completed", text="hi"
)
URL = "https://hooks.example/post?token=s3cr3t"


async def test_run_may_be_async_and_may_skip() -> None:
    async def later(ctx: ScheduleContext) -> str | None:
        return f"report for {ctx.tick:%Y-%m-%d}"

    assert (
        await ResolvedSchedule(entry=ENTRY, run=later).message(CONTEXT) == "report for 2026-01-05"
    )
    assert await ResolvedSchedule(entry=ENTRY, run=lambda ctx: None).message(CONTEXT) is None


async def test_a_run_that_raises_or_returns_no_text_is_a_named_error() -> None:
    def broken(ctx: ScheduleContext) -> str:
        raise KeyError("feed")

    with pytest.raises(ScheduleRunFailed, match=r"run\(ctx\) raised KeyError") as raised:
        await ResolvedSchedule(entry=ENTRY, run=broken).message(CONTEXT)
    assert raised.value.name == "job"
    with pytest.raises(ScheduleRunFailed, match="returned a int"):
        await ResolvedSchedule(entry=ENTRY, run=lambda ctx: 3).message(CONTEXT)  # type: ignore[arg-type,return-value]


SECRET = "whsec_" + base64.b64encode(b"k" * 32).decode()


async def test_the_webhook_gets_the_outcome_signed_the_standard_webhooks_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[httpx.Request] = []

    def receive(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(204)

    monkeypatch.setenv("HOOK_URL", URL)
    monkeypatch.setenv("HOOK_SECRET", f"whsec_{base64.b64encode(b'old' * 10).decode()} {SECRET}")
    delivery = WebhookDelivery(url_env="HOOK_URL", secret_env="HOOK_SECRET")
    for _ in range(2):  # a try, and another try of the same run
        tried = await post_once(delivery, OUTCOME, transport=httpx.MockTransport(receive))
        assert tried == Taken(status=204)
    first, again = seen
    assert first.url == URL
    assert b'"sessionId":"ses_x"' in first.content
    # the reference implementation verifies it, under the new secret as under the old one
    assert Webhook(SECRET).verify(first.content, dict(first.headers))["text"] == "hi"
    assert len(first.headers["webhook-signature"].split(" ")) == 2
    assert first.headers["webhook-id"] == again.headers["webhook-id"]  # the same message
    assert first.headers["webhook-id"] != webhook_id("ses_x", "turn_1")
    with pytest.raises(WebhookVerificationError):
        Webhook("whsec_" + base64.b64encode(b"x" * 32).decode()).verify(
            first.content, dict(first.headers)
        )


async def test_not_now_is_tried_again_and_no_is_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOOK_URL", URL)
    delivery = WebhookDelivery(url_env="HOOK_URL")

    def answering(status: int, **headers: str) -> httpx.MockTransport:
        return httpx.MockTransport(lambda r: httpx.Response(status, headers=headers, text="x"))

    busy = await post_once(delivery, OUTCOME, transport=answering(429, **{"retry-after": "7"}))
    assert busy == TryAgain(status=429, retry_after=7.0, why="answered 429: x")
    down = await post_once(delivery, OUTCOME, transport=answering(503))
    assert isinstance(down, TryAgain) and down.retry_after is None
    assert [next_wait(down, n) for n in (1, 2, 5, 9)] == [5.0, 30.0, 1800.0, 1800.0]
    assert next_wait(busy, 1) == 7.0
    with pytest.raises(ScheduleDeliveryFailed, match="answered 410") as gone:
        await post_once(delivery, OUTCOME, transport=answering(410))
    assert gone.value.status == 410


def test_retry_after_is_seconds_or_a_date_and_capped() -> None:
    now = 1_700_000_000.0
    assert retry_after("120", now=now) == 120.0
    assert retry_after(formatdate(now + 30, usegmt=True), now=now) == 30.0
    assert retry_after(formatdate(now - 30, usegmt=True), now=now) == 0.0
    assert retry_after("999999", now=now) == 3600.0
    assert retry_after("soon", now=now) is None
    assert retry_after(None, now=now) is None


async def test_an_unset_variable_a_bad_secret_or_no_answer_never_shows_the_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    delivery = WebhookDelivery(url_env="HOOK_URL", secret_env="HOOK_SECRET")
    monkeypatch.delenv("HOOK_URL", raising=False)
    with pytest.raises(ScheduleDeliveryFailed, match=r"\$HOOK_URL is not set") as unset:
        await post_once(delivery, OUTCOME)
    assert unset.value.status is None

    monkeypatch.setenv("HOOK_URL", URL)
    for bad, why in [("s3cr3t-plain", "starts with 'whsec_'"), ("whsec_c2hvcnQ=", "5 bytes")]:
        monkeypatch.setenv("HOOK_SECRET", bad)
        with pytest.raises(ScheduleDeliveryFailed, match=why) as invalid:
            await post_once(delivery, OUTCOME)
        assert bad not in str(invalid.value)

    def unreachable(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError(f"cannot connect to {request.url}")

    monkeypatch.setenv("HOOK_SECRET", SECRET)
    lost = await post_once(delivery, OUTCOME, transport=httpx.MockTransport(unreachable))
    assert lost == TryAgain(status=None, retry_after=None, why="no answer (ConnectError)")
    for said in (str(unset.value), lost.why):
        assert "s3cr3t" not in said
