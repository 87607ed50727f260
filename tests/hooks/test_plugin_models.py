"""Model providers from plugins: ``eve_model_providers`` through a real dist-info."""

from __future__ import annotations

from pathlib import Path

import pytest

from eve import define_agent
from eve.errors import PluginConflict, PluginLoadError, UnknownModel
from eve.models.registry import choose_model, create_client
from tests.cli.test_run_cli import eve_run
from tests.conftest import AppFactory
from tests.hooks.installed import install

ACME = """
from eve.hooks import hookimpl
from eve.models.events import Done, TextDelta, TokenUsage


class EchoModel:
    def __init__(self, name, greeting):
        self.model_id = "acme/" + name
        self.greeting = greeting

    async def stream(self, request):
        yield TextDelta(text=f"{self.greeting} from {self.model_id}: {request.messages[-1].text}")
        yield Done(stop_reason="end_turn", usage=TokenUsage())


def build(name, *, env, app_root):
    return EchoModel(name, env.get("ACME_GREETING", "echo"))


@hookimpl
def eve_model_providers():
    return {"acme": build}
"""


def provider(prefix: str) -> str:
    return f"""
from eve.hooks import hookimpl

@hookimpl
def eve_model_providers():
    return {{"{prefix}": lambda name, *, env, app_root: None}}
"""


def test_eve_run_model_uses_a_plugin_provider(site: Path, make_app: AppFactory) -> None:
    install(site, "eve_test_acme", ACME, "acme = eve_test_acme")
    done = eve_run(make_app(), "hi there", "--model", "acme/echo-1", env={"ACME_GREETING": "hello"})
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hello from acme/echo-1: hi there\n"


def test_define_agent_model_uses_a_plugin_provider(site: Path, make_app: AppFactory) -> None:
    install(site, "eve_test_acme", ACME, "acme = eve_test_acme")
    agent = 'from eve import define_agent\ndefault = define_agent(model="acme/echo-2")\n'
    done = eve_run(make_app({"agent/agent.py": agent}), "ping")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "echo from acme/echo-2: ping\n"


def test_choose_model_builds_the_plugin_client(site: Path, tmp_path: Path) -> None:
    install(site, "eve_test_acme", ACME, "acme = eve_test_acme")
    model = define_agent(model="acme/echo-1").config.model
    choice = choose_model(model, app_root=tmp_path, env={})
    assert (choice.client.model_id, choice.notice) == ("acme/echo-1", None)


def test_the_unknown_model_error_lists_plugin_prefixes(site: Path, tmp_path: Path) -> None:
    install(site, "eve_test_acme", ACME, "acme = eve_test_acme")
    with pytest.raises(UnknownModel, match=r"openai/<model>, acme/<model>, offline/test") as raised:
        create_client("mystery/x", app_root=tmp_path, env={})
    assert "install the one that provides it" in str(raised.value)


def test_a_prefix_eve_builds_in_cannot_be_taken(site: Path, tmp_path: Path) -> None:
    install(site, "eve_test_thief", provider("openai"), "thief = eve_test_thief")
    with pytest.raises(PluginConflict) as raised:
        create_client("acme/x", app_root=tmp_path, env={})
    assert str(raised.value) == (
        "the eve.plugins entry point 'thief' (eve_test_thief) provides the model provider "
        "'openai', which is built into eve; uninstall one of them or ask its author to rename it"
    )
    error = raised.value
    assert (error.kind, error.name, error.plugins) == ("model provider", "openai", ["eve", "thief"])  # type: ignore[attr-defined]


def test_two_plugins_cannot_share_a_prefix(site: Path, tmp_path: Path) -> None:
    install(site, "eve_test_acme", ACME, "acme = eve_test_acme")
    install(site, "eve_test_copy", provider("acme"), "copy = eve_test_copy")
    with pytest.raises(PluginConflict, match="which is provided by the plugin 'acme'"):
        create_client("acme/x", app_root=tmp_path, env={})


def test_a_malformed_provider_mapping_names_the_plugin(site: Path, tmp_path: Path) -> None:
    install(site, "eve_test_bad", provider("a/b"), "bad = eve_test_bad")
    with pytest.raises(PluginLoadError, match=r"'bad' \(eve_test_bad\) returned something other"):
        create_client("acme/x", app_root=tmp_path, env={})


def test_a_built_in_model_never_loads_plugins(site: Path, tmp_path: Path) -> None:
    install(site, "eve_test_broken", "raise ImportError('no luck')", "broken = eve_test_broken")
    assert create_client("offline/test", app_root=tmp_path, env={}).model_id == "offline/test"
    with pytest.raises(PluginLoadError, match="failed to import"):
        create_client("acme/x", app_root=tmp_path, env={})


def test_eve_run_reports_a_prefix_conflict_at_startup(site: Path, make_app: AppFactory) -> None:
    install(site, "eve_test_thief", provider("offline"), "thief = eve_test_thief")
    done = eve_run(make_app(), "hi", "--model", "acme/x")
    assert done.returncode == 1
    assert "eve: the eve.plugins entry point 'thief'" in done.stderr
    assert "which is built into eve" in done.stderr
