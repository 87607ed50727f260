"""A ``.py`` schedule's ``run(ctx)`` (sync, async, skipping, failing) and the webhook post,
each failure a named error; the URL never appears in one."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest

from eve.authoring.schedules import ScheduleContext
from eve.errors import ScheduleDeliveryFailed, ScheduleRunFailed
from eve.manifest import ScheduleEntry, WebhookDelivery
from eve.schedules.delivery import RunOutcome, deliver
from eve.schedules.resolved import ResolvedSchedule

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


async def test_the_webhook_gets_the_outcome(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[httpx.Request] = []

    def receive(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(204)

    monkeypatch.setenv("HOOK_URL", URL)
    status = await deliver(
        WebhookDelivery(url_env="HOOK_URL"), OUTCOME, transport=httpx.MockTransport(receive)
    )
    assert status == 204
    assert seen[0].url == URL
    assert b'"sessionId":"ses_x"' in seen[0].content


async def test_an_unset_variable_or_a_refusal_fails_without_the_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    delivery = WebhookDelivery(url_env="HOOK_URL")
    monkeypatch.delenv("HOOK_URL", raising=False)
    with pytest.raises(ScheduleDeliveryFailed, match=r"\$HOOK_URL is not set") as unset:
        await deliver(delivery, OUTCOME)
    assert unset.value.status is None

    monkeypatch.setenv("HOOK_URL", URL)
    refusing = httpx.MockTransport(lambda request: httpx.Response(500, text="down"))
    with pytest.raises(ScheduleDeliveryFailed, match="answered 500") as refused:
        await deliver(delivery, OUTCOME, transport=refusing)
    assert refused.value.status == 500

    def unreachable(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError(f"cannot connect to {request.url}")

    with pytest.raises(ScheduleDeliveryFailed) as lost:
        await deliver(delivery, OUTCOME, transport=httpx.MockTransport(unreachable))
    for error in (unset.value, refused.value, lost.value):
        assert "s3cr3t" not in str(error)
