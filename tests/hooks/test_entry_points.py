"""Framework plugins through the ``eve.plugins`` entry-point group, from a real dist-info."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from eve.errors import PluginLoadError
from eve.hooks import HookRelay
from tests.cli.test_run_cli import eve_run
from tests.conftest import AppFactory
from tests.execution.helpers import Script, text
from tests.hooks.installed import install
from tests.hooks.test_relay import run

PLUGIN = """
from eve.hooks import hookimpl

seen = []

@hookimpl
def turn_completed(event):
    seen.append(event.data.stop_reason)
"""


async def test_an_installed_plugin_receives_hook_events(site: Path) -> None:
    install(site, "eve_test_audit", PLUGIN, "audit = eve_test_audit")
    relay = HookRelay.for_hooks([])
    assert relay.manager.has_plugin("eve.plugins:audit")
    await run(relay, Script(text("ok")))
    assert sys.modules["eve_test_audit"].seen == ["complete"]


def test_a_plugin_that_fails_to_import_is_a_named_error(site: Path) -> None:
    install(site, "eve_test_broken", "raise ImportError('no luck')", "broken = eve_test_broken")
    with pytest.raises(PluginLoadError, match=r"'broken'.*failed to import") as raised:
        HookRelay.for_hooks([])
    assert raised.value.plugin == "broken"  # type: ignore[attr-defined]


def test_a_plugin_that_breaks_the_specs_is_a_named_error(site: Path) -> None:
    source = "from eve.hooks import hookimpl\n@hookimpl\ndef turn_completed(event, extra): ...\n"
    install(site, "eve_test_wrong", source, "wrong = eve_test_wrong")
    with pytest.raises(PluginLoadError, match="does not match eve's hook specs"):
        HookRelay.for_hooks([])


def test_plugins_can_be_left_out(site: Path) -> None:
    install(site, "eve_test_audit", PLUGIN, "audit = eve_test_audit")
    assert not HookRelay.for_hooks([], plugins=False).manager.has_plugin("eve.plugins:audit")


def test_eve_run_stops_at_startup_on_a_broken_plugin(site: Path, make_app: AppFactory) -> None:
    install(site, "eve_test_broken", "raise ImportError('no luck')", "broken = eve_test_broken")
    done = eve_run(make_app(), "hi")
    assert done.returncode == 1
    assert "eve: the eve.plugins entry point 'broken'" in done.stderr
    assert "ImportError: no luck" in done.stderr
