"""No silent fakes: a server never answers with the offline model on its own. Without the
key of the agent's model, ``eve serve`` and an embedded app refuse to start; ``--model
offline/test`` serves it on purpose, and ``/info`` says which model is served."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from eve.cli import main
from eve.compiler import compile_to_disk
from eve.errors import ServedModelUnavailable
from eve.models.registry import choose_model
from eve.server import eve_app
from tests.conftest import AppFactory

CLAUDE_APP = {
    "agent/agent.py": """
        from eve import define_agent
        default = define_agent(model="anthropic/claude-sonnet-4-5")
    """,
}


ECHO = '''
from eve.tools import tool


@tool
def echo(text: str) -> str:
    """Say it back."""
    return text
'''


@pytest.fixture
def claude_app(make_app: AppFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("EVE_WORKER_ID", "served-model-test")
    root = make_app(CLAUDE_APP)
    compile_to_disk(root)
    return root


def test_choose_model_without_fallback_names_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(ServedModelUnavailable, match="ANTHROPIC_API_KEY is not set") as raised:
        choose_model("anthropic/claude-sonnet-4-5", app_root=tmp_path, env={}, fallback=False)
    assert (raised.value.variable, raised.value.model_id, raised.value.exit_code) == (
        "ANTHROPIC_API_KEY",
        "anthropic/claude-sonnet-4-5",
        2,
    )
    with pytest.raises(ServedModelUnavailable, match="names no model"):
        choose_model(None, app_root=tmp_path, env={}, fallback=False)
    # run, dev and eval still fall back, and say so
    chosen = choose_model("anthropic/claude-sonnet-4-5", app_root=tmp_path, env={})
    assert chosen.client.model_id == "offline/test" and chosen.notice


def test_eve_serve_refuses_to_serve_a_model_it_has_no_key_for(claude_app: Path) -> None:
    result = CliRunner().invoke(main, ["-C", str(claude_app), "serve", "--port", "0"])
    assert result.exit_code == 2, result.output
    assert "ANTHROPIC_API_KEY is not set, so anthropic/claude-sonnet-4-5 cannot be served" in (
        result.stderr
    )
    assert "--model offline/test" in result.stderr


def test_an_embedded_app_refuses_to_start_without_the_key(claude_app: Path) -> None:
    with (
        pytest.raises(ServedModelUnavailable, match="ANTHROPIC_API_KEY"),
        TestClient(eve_app(claude_app), base_url="http://127.0.0.1"),
    ):
        pass


def test_info_says_which_model_is_served(claude_app: Path) -> None:
    with TestClient(eve_app(claude_app, model="offline/test"), base_url="http://127.0.0.1") as http:
        info = http.get("/eve/v1/info").json()
    assert info["agent"]["model"] == "anthropic/claude-sonnet-4-5"  # what agent.py names
    assert info["served_model"] == "offline/test"  # what answers


def test_a_source_edited_after_start_is_said_on_info_and_in_the_log(
    make_app: AppFactory, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVE_WORKER_ID", "served-stale-test")
    root = make_app({"agent/tools/echo.py": ECHO})
    compile_to_disk(root)
    app = eve_app(root)
    app.options = dataclasses.replace(app.options, watch_seconds=0.05)
    with TestClient(app, base_url="http://127.0.0.1") as http:
        assert http.get("/eve/v1/info").json()["served_stale_sources"] == []
        (root / "agent/tools/echo.py").write_text(ECHO + "\n# edited\n")
        (root / "agent/tools/new.py").write_text(ECHO.replace("def echo", "def new"))
        info = http.get("/eve/v1/info").json()
        assert info["served_stale_sources"] == ["agent/tools/echo.py", "agent/tools/new.py"]
        deadline = 200  # polls of the watcher's log line, not a timing assertion
        while "changed since this server loaded the agent" not in caplog.text and deadline:
            http.get("/eve/v1/health")
            time.sleep(0.05)
            deadline -= 1
    assert "agent/tools/echo.py, agent/tools/new.py changed since this server loaded" in (
        caplog.text
    )
