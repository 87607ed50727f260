"""A schedule's webhook signing secret checked at compile time: a variable's name, with a
webhook to sign for."""

from __future__ import annotations

from eve.compiler import compile_agent
from eve.manifest import ROOT_NODE_ID, WebhookDelivery
from tests.conftest import AppFactory
from tests.schedules.apps import md_schedule

SIGNED = """
from eve.schedules import define_schedule

schedule = define_schedule(
    cron="0 8 * * mon", run=lambda ctx: "weekly", webhook_url_env="HOOK",
    webhook_secret_env="HOOK_SECRET",
)
"""


def test_md_and_py_schedules_name_their_secrets_variable(make_app: AppFactory) -> None:
    digest = md_schedule(cron="0 9 * * *", webhook_url_env="HOOK", webhook_secret_env="SECRET")
    root = make_app({"agent/schedules/digest.md": digest, "agent/schedules/weekly.py": SIGNED})
    result = compile_agent(root)
    assert result.manifest is not None, result.diagnostics.items
    digest_entry, weekly = result.manifest.nodes[ROOT_NODE_ID].schedules
    assert digest_entry.deliver == WebhookDelivery(url_env="HOOK", secret_env="SECRET")
    assert weekly.deliver == WebhookDelivery(url_env="HOOK", secret_env="HOOK_SECRET")


def test_a_secret_is_a_variable_and_signs_a_webhook(make_app: AppFactory) -> None:
    written = md_schedule(
        cron="0 9 * * *", webhook_url_env="HOOK", webhook_secret_env="whsec_abc+/="
    )
    alone = md_schedule(cron="0 9 * * *", webhook_secret_env="SECRET")
    root = make_app({"agent/schedules/a.md": written, "agent/schedules/b.md": alone})
    result = compile_agent(root)
    assert result.manifest is None
    errors = {
        (d.source_path or "").rsplit("/", 1)[-1]: (d.code, d.message)
        for d in result.diagnostics.items
        if d.severity == "error"
    }
    assert errors["a.md"][0] == "compile/schedule-option-invalid"
    assert "must name the environment variable" in errors["a.md"][1]
    assert "whsec_abc" in errors["a.md"][1]  # what was written, to find it
    assert "it goes with webhook_url_env" in errors["b.md"][1]
