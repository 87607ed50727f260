"""A schedule's ``channel:`` delivery checked at compile time: a channel of
``agent/channels/`` whose kind can post first, each problem naming the file and the field."""

from __future__ import annotations

from eve.compiler import compile_agent
from eve.manifest import ROOT_NODE_ID, ChannelDelivery
from tests.conftest import AppFactory
from tests.schedules.apps import md_schedule

CHANNELS = {
    "agent/channels/team.py": "from eve.channels import slack\n\nchannel = slack()\n",
    "agent/channels/chat.py": "from eve.channels import ai_sdk\n\nchannel = ai_sdk()\n",
}
WEEKLY = """
from eve.schedules import define_schedule

schedule = define_schedule(cron="0 8 * * mon", run=lambda ctx: "weekly", channel="team", to="C9")
"""


def _errors(make_app: AppFactory, schedules: dict[str, str]) -> list[tuple[str, str, str]]:
    result = compile_agent(make_app({**CHANNELS, **schedules}))
    assert result.manifest is None
    return [
        (d.code, d.source_path or "", d.message)
        for d in result.diagnostics.items
        if d.severity == "error"
    ]


def test_md_and_py_schedules_name_a_slack_channel(make_app: AppFactory) -> None:
    digest = md_schedule(cron="0 9 * * *", channel="team", to="C0123")
    result = compile_agent(
        make_app(
            {**CHANNELS, "agent/schedules/digest.md": digest, "agent/schedules/weekly.py": WEEKLY}
        )
    )
    assert result.manifest is not None, result.diagnostics.items
    digest_entry, weekly = result.manifest.nodes[ROOT_NODE_ID].schedules
    assert digest_entry.deliver == ChannelDelivery(channel="team", to="C0123")
    assert weekly.deliver == ChannelDelivery(channel="team", to="C9")


def test_a_kind_that_cannot_post_first_or_an_unknown_channel_is_named(
    make_app: AppFactory,
) -> None:
    errors = _errors(
        make_app,
        {
            "agent/schedules/chatty.md": md_schedule(cron="0 9 * * *", channel="chat", to="x"),
            "agent/schedules/lost.md": md_schedule(cron="0 9 * * *", channel="nope", to="C1"),
        },
    )
    assert [(code, path) for code, path, _ in errors] == [
        ("compile/schedule-delivery-invalid", "agent/schedules/chatty.md"),
        ("compile/schedule-delivery-invalid", "agent/schedules/lost.md"),
    ]
    assert "'chat', a channel of kind ai_sdk" in errors[0][2]
    assert "cannot post first" in errors[0][2]
    assert "'nope', which is not a channel of agent/channels/ (chat, team)" in errors[1][2]


def test_channel_and_to_go_together_and_alone(make_app: AppFactory) -> None:
    errors = _errors(
        make_app,
        {
            "agent/schedules/a.md": md_schedule(cron="0 9 * * *", channel="team"),
            "agent/schedules/b.md": md_schedule(cron="0 9 * * *", to="C1"),
            "agent/schedules/c.md": md_schedule(
                cron="0 9 * * *", channel="team", to="C1", webhook_url_env="HOOK"
            ),
            "agent/schedules/d.md": md_schedule(
                cron="0 9 * * *", channel="team", to="C1", session="daily"
            ),
        },
    )
    assert {code for code, _, _ in errors} == {"compile/schedule-option-invalid"}
    messages = {path.rsplit("/", 1)[-1]: message for _, path, message in errors}
    assert "field to: is missing" in messages["a.md"]
    assert "field channel: is missing" in messages["b.md"]
    assert "webhook_url_env both deliver" in messages["c.md"]
    assert "cannot go with session" in messages["d.md"]
