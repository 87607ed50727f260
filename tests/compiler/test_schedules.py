"""``agent/schedules/``: .md and .py schedules compiled into the manifest, each problem a
diagnostic naming the file and the field."""

from __future__ import annotations

from eve.compiler import compile_agent
from eve.manifest import ROOT_NODE_ID, WebhookDelivery
from tests.conftest import AppFactory

DIGEST = """---
cron: 0 9 * * 1-5
timezone: Europe/Paris
catch_up: true
session: digest
---
Summarise what changed yesterday.
"""

WEEKLY = """
from eve.schedules import define_schedule

def run(ctx):
    return None if ctx.manual else "weekly"

schedule = define_schedule(cron="0 8 * * mon", run=run, webhook_url_env="REPORT_URL")
"""


def test_md_and_nested_py_schedules_compile(make_app: AppFactory) -> None:
    root = make_app(
        {"agent/schedules/digest.md": DIGEST, "agent/schedules/reports/weekly.py": WEEKLY}
    )
    result = compile_agent(root)
    assert result.manifest is not None, result.diagnostics.items
    node = result.manifest.nodes[ROOT_NODE_ID]
    digest, weekly = node.schedules
    assert (digest.name, digest.cron, digest.timezone) == ("digest", "0 9 * * 1-5", "Europe/Paris")
    assert (digest.catch_up, digest.session, digest.has_run) == (True, "digest", False)
    assert digest.prompt == "Summarise what changed yesterday.\n"
    assert (weekly.name, weekly.has_run, weekly.prompt) == ("reports/weekly", True, None)
    assert weekly.deliver == WebhookDelivery(url_env="REPORT_URL")
    # the .py schedule's run is re-attached at run time: it is a runtime root
    assert "schedules/reports/weekly.py" in node.runtime_roots


def _errors(root: object) -> list[tuple[str, str | None, str]]:
    result = compile_agent(root)  # type: ignore[arg-type]
    assert result.manifest is None
    return [
        (d.code, d.source_path, d.message)
        for d in result.diagnostics.items
        if d.severity == "error"
    ]


def test_a_bad_cron_names_the_file_and_the_field(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/schedules/bad.md": "---\ncron: 0 25 * * *\ntimezone: Mars/Olympus\n---\nx\n",
            "agent/schedules/worse.py": (
                "from eve.schedules import define_schedule\n"
                "s = define_schedule(cron='every day', run=lambda ctx: 'x')\n"
            ),
        }
    )
    errors = _errors(root)
    codes = {(code, path) for code, path, _ in errors}
    assert codes == {
        ("compile/schedule-cron-invalid", "agent/schedules/bad.md"),
        ("compile/schedule-timezone-invalid", "agent/schedules/bad.md"),
        ("compile/schedule-cron-invalid", "agent/schedules/worse.py"),
    }
    messages = " ".join(message for _, _, message in errors)
    assert "schedule 'bad', field cron: cron '0 25 * * *' is not a valid cron" in messages
    assert "field timezone: time zone 'Mars/Olympus'" in messages
    assert "schedule 'worse', field cron: cron 'every day' has 2 field(s)" in messages


def test_unknown_fields_a_missing_prompt_and_a_url_instead_of_a_variable(
    make_app: AppFactory,
) -> None:
    root = make_app(
        {
            "agent/schedules/a.md": "---\ncron: '* * * * *'\ncolour: red\n---\n\n",
            "agent/schedules/b.md": (
                "---\ncron: 0 * * * *\nwebhook_url_env: https://hooks.example/x\n---\nhi\n"
            ),
        }
    )
    found = {(code, message.split(":")[0]) for code, _, message in _errors(root)}
    assert found == {
        ("compile/schedule-option-invalid", "schedule 'a', field colour"),
        ("compile/schedule-prompt-missing", "schedule 'a', field body"),
        ("compile/schedule-option-invalid", "schedule 'b', field webhook_url_env"),
    }


def test_schedules_belong_to_the_root_and_names_are_unique(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/schedules/daily.md": "---\ncron: 0 9 * * *\n---\nhi\n",
            "agent/schedules/daily.py": WEEKLY,
            "agent/schedules/Bad Name.md": "---\ncron: 0 9 * * *\n---\nhi\n",
            "agent/subagents/helper/agent.py": (
                "from eve import define_agent\ndefault = define_agent(description='h')\n"
            ),
            "agent/subagents/helper/schedules/x.md": "---\ncron: 0 9 * * *\n---\nhi\n",
        }
    )
    codes = {code for code, _, _ in _errors(root)}
    assert codes == {
        "discover/schedule-name-collision",
        "discover/schedule-name-invalid",
        "discover/schedules-not-at-root",
    }
