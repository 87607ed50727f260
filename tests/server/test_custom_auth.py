"""``agent/auth.py``: compiled like any resource, resolved through the module map, called for
each request the built-in schemes do not accept; a hook that fails is a named 500 whose log
and answer never carry the exception's text."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from eve.auth import define_auth
from eve.cli.main import main
from eve.compiler import compile_agent, compile_to_disk
from eve.errors import AuthoringError
from tests.conftest import AppFactory
from tests.sessions.inprocess import InProcessServer

TOKEN = "custom-auth-test-token-0123456789abcdef"
SECRET = "sk-live-hunter2-never-logged"

AUTH = f"""
from eve.auth import Principal, define_auth

KEYS = {{"key-of-ann": "ann", "key-of-bob": "bob"}}


async def authenticate(request):
    key = request.headers.get("x-api-key")
    if key == "boom":
        raise ValueError("the database said no to {SECRET}")
    if key == "wrong-type":
        return "ann"
    user = KEYS.get(key or "")
    return None if user is None else Principal(id=f"key:{{user}}", kind="user", claims={{"roles": ["staff"]}})


default = define_auth(authenticate)
"""


@pytest.fixture
def server(make_app: AppFactory) -> Iterator[InProcessServer]:
    root = make_app({"agent/auth.py": AUTH})
    server = InProcessServer(root, env={"EVE_API_TOKEN": TOKEN}).start()
    yield server
    server.stop()


def test_the_hook_proves_callers_the_shared_token_does_not(server: InProcessServer) -> None:
    assert server.get("/sessions", headers={"x-api-key": "key-of-ann"}).status_code == 200
    assert server.get("/sessions", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200
    refused = server.get("/sessions", headers={"x-api-key": "key-of-eve"})
    assert refused.status_code == 401 and refused.json()["code"] == "unauthorized"
    assert server.get("/sessions", headers={}).status_code == 401


def test_a_failing_hook_is_a_500_that_never_shows_what_it_raised(
    server: InProcessServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    raised = server.get("/sessions", headers={"x-api-key": "boom"})
    wrong = server.get("/sessions", headers={"x-api-key": "wrong-type"})
    log = server.stop() + caplog.text
    assert raised.status_code == wrong.status_code == 500
    assert raised.json()["code"] == wrong.json()["code"] == "auth_hook_failed"
    assert "agent/auth.py: authenticate raised ValueError" in raised.json()["error"]
    assert "returned str" in wrong.json()["error"]
    assert "authenticate raised ValueError at line" in log
    assert SECRET not in log and SECRET not in raised.text


def test_auth_py_compiles_into_the_root_node_and_nowhere_else(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/auth.py": AUTH,
            "agent/subagents/helper/agent.py": (
                "from eve import define_agent\n"
                "default = define_agent(description='helps', model='offline/test')\n"
            ),
            "agent/subagents/helper/instructions.md": "Help.\n",
            "agent/subagents/helper/auth.py": AUTH,
        }
    )
    result = compile_agent(root)
    codes = [d.code for d in result.diagnostics.items if d.severity == "error"]
    assert codes == ["discover/auth-in-subagent"]
    alone = make_app({"agent/auth.py": AUTH})
    manifest = compile_agent(alone).manifest
    assert manifest is not None
    entry = manifest.nodes["__root__"].auth
    assert entry is not None and entry.logical_path == "agent/auth.py"
    assert entry.source_id in manifest.nodes["__root__"].runtime_roots


def test_info_names_the_hook_and_only_when_there_is_one(make_app: AppFactory) -> None:
    def info(root: Path, *args: str) -> str:
        compile_to_disk(root)
        result = CliRunner().invoke(main, ["-C", str(root), "info", *args])
        assert result.exit_code == 0, result.output
        return result.output

    root = make_app({"agent/auth.py": AUTH})
    document = json.loads(info(root, "--json"))
    assert document["auth"] == {"source": "agent/auth.py", "export_name": "default"}
    assert "auth: agent/auth.py (define_auth, default)" in info(root).splitlines()
    without = make_app()
    assert json.loads(info(without, "--json"))["auth"] is None
    assert "auth:" not in info(without)


def test_an_auth_py_without_define_auth_is_a_compile_error(make_app: AppFactory) -> None:
    root = make_app({"agent/auth.py": "def authenticate(request):\n    return None\n"})
    result = compile_agent(root)
    errors = [d for d in result.diagnostics.items if d.severity == "error"]
    assert [d.source_path for d in errors] == ["agent/auth.py"]
    assert "define_auth(authenticate)" in errors[0].message


def test_define_auth_refuses_what_cannot_take_the_request() -> None:
    with pytest.raises(AuthoringError, match="takes a function"):
        define_auth("not a function")  # type: ignore[arg-type]
    with pytest.raises(AuthoringError, match="exactly one argument"):
        define_auth(lambda: None)
