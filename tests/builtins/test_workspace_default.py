"""Where a compiled agent's tools work: a folder of its own, and never eve's own files.

Issue 12, finding 1: with no ``workspace`` set, the app root was the workspace, so an
unapproved write_file could plant ``agent/tools/x.py`` (imported on the next start) and
read_file could read every session's database under ``.eve/sessions``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from eve.authoring.context import ToolContext
from eve.builtins import read_file
from eve.cli.main import main
from eve.errors import WorkspaceUnsafe, WorkspaceViolation
from eve.execution.setup import DEFAULT_WORKSPACE, workspace_for
from tests.builtins.conftest import call
from tests.cli.test_run_cli import eve_run
from tests.conftest import AppFactory


def _agent(workspace: str | None, *, script: str = "script.json") -> dict[str, str]:
    option = f", workspace={workspace!r}" if workspace is not None else ""
    return {
        "agent/agent.py": f"""
            from eve import define_agent
            default = define_agent(
                model="offline/script:{script}", builtin_tools=["read_file", "write_file"]{option}
            )
        """
    }


def test_the_default_workspace_is_a_folder_of_its_own(tmp_path: Path) -> None:
    assert workspace_for(tmp_path, None, create=False) == (tmp_path / DEFAULT_WORKSPACE).resolve()
    assert not (tmp_path / DEFAULT_WORKSPACE).exists()  # made only for the built-in tools
    assert workspace_for(tmp_path, None, create=True).is_dir()
    assert workspace_for(tmp_path, "data/work", create=True) == (tmp_path / "data/work").resolve()


@pytest.mark.parametrize(
    ("configured", "conflict", "how"),
    [
        (".", ".eve", "contains .eve/"),
        ("./", ".eve", "contains .eve/"),
        ("agent", "agent", "is or lies inside agent/"),
        ("agent/lib", "agent", "is or lies inside agent/"),
        (".eve/sessions", ".eve", "is or lies inside .eve/"),
        (".eve", ".eve", "is or lies inside .eve/"),
    ],
)
def test_a_workspace_overlapping_eves_files_is_refused(
    tmp_path: Path, configured: str, conflict: str, how: str
) -> None:
    with pytest.raises(WorkspaceUnsafe) as raised:
        workspace_for(tmp_path, configured, create=True)
    assert raised.value.conflict == conflict
    assert raised.value.workspace == configured
    assert how in str(raised.value)
    assert raised.value.exit_code == 2


def test_a_workspace_reaching_eves_files_through_a_symlink_is_refused(tmp_path: Path) -> None:
    (tmp_path / "agent").mkdir()
    (tmp_path / "work").symlink_to("agent", target_is_directory=True)
    with pytest.raises(WorkspaceUnsafe, match="lies inside agent/"):
        workspace_for(tmp_path, "work", create=True)


async def test_the_session_database_is_out_of_reach_of_the_default_workspace(
    tmp_path: Path,
) -> None:
    (tmp_path / ".eve" / "sessions").mkdir(parents=True)
    (tmp_path / ".eve" / "sessions" / "eve.sqlite").write_text("every session's messages")
    workspace = workspace_for(tmp_path, None, create=True)
    ctx = ToolContext(session_id="s", call_id="c", tool_name="read_file", workspace=workspace)
    for path in (".eve/sessions/eve.sqlite", "../.eve/sessions/eve.sqlite"):
        with pytest.raises((WorkspaceViolation, FileNotFoundError)):
            await call(read_file.default, ctx, path=path)
    with pytest.raises(WorkspaceViolation):
        await call(read_file.default, ctx, path=str(tmp_path / ".eve/sessions/eve.sqlite"))


def test_eve_run_writes_agent_code_into_the_workspace_not_into_agent(
    make_app: AppFactory,
) -> None:
    root = make_app(_agent(None))
    planted = {"name": "write_file", "input": {"path": "agent/tools/x.py", "content": "boom"}}
    (root / "script.json").write_text(json.dumps([{"tool_calls": [planted]}, {"text": "ok"}]))
    done = eve_run(root, "go")
    assert done.returncode == 0, done.stderr
    assert not (root / "agent" / "tools" / "x.py").exists()
    assert (root / DEFAULT_WORKSPACE / "agent" / "tools" / "x.py").read_text() == "boom"


# `serve` binds before it prepares: port 0, so a server of another test on 8000 is no matter
@pytest.mark.parametrize("command", [["run", "hi"], ["dev"], ["serve", "--port", "0"]])
def test_every_command_refuses_the_app_root_as_workspace(
    make_app: AppFactory, command: list[str]
) -> None:
    root = make_app(_agent("."))
    (root / "script.json").write_text("[]")
    result = CliRunner().invoke(main, ["-C", str(root), *command])
    assert result.exit_code == WorkspaceUnsafe.exit_code, result.output
    assert "the workspace '.' contains .eve/" in result.output
