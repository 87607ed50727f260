"""Sandboxes compiled: ``sandbox.py`` and ``sandbox/workspace/**`` into a node's manifest
entry, a subagent inheriting its parent's, ``define_sandbox``'s refusals and the warnings
and errors of what it declares, and ``eve info`` showing it."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from eve.authoring.sandbox import SandboxLimits, define_sandbox
from eve.cli.main import main as cli
from eve.compiler import compile_agent, compile_to_disk
from eve.errors import AuthoringError
from tests.conftest import AppFactory

SANDBOX = """
    from eve.sandbox import SandboxLimits, define_sandbox
    default = define_sandbox({args})
"""
SUBAGENT = {
    "agent/subagents/helper/agent.py": (
        "from eve import define_agent\ndefault = define_agent(description='helps')\n"
    ),
    "agent/subagents/helper/instructions.md": "Help.\n",
}


def test_a_sandbox_compiles_with_its_seed_files_and_subagents_inherit_it(
    make_app: AppFactory,
) -> None:
    root = make_app(
        {
            "agent/sandbox.py": SANDBOX.format(args="limits=SandboxLimits(cpu_seconds=5)"),
            "agent/sandbox/workspace/notes/todo.md": "- read\n",
            "agent/sandbox/workspace/data.csv": "a,b\n",
            "agent/sandbox/workspace/__pycache__/x.pyc": "ignored",
            **SUBAGENT,
        }
    )
    result = compile_agent(root)
    assert result.manifest is not None, result.diagnostics.items
    root_node = result.manifest.nodes["__root__"]
    sandbox = root_node.sandbox
    assert sandbox is not None
    assert (sandbox.provider, sandbox.network, sandbox.limits.cpu_seconds) == (None, False, 5)
    assert sandbox.workspace_files == [
        "agent/sandbox/workspace/data.csv",
        "agent/sandbox/workspace/notes/todo.md",
    ]
    # data only: read at compile time, never a runtime root
    assert "sandbox.py" in root_node.compile_loads
    assert "sandbox.py" not in root_node.runtime_roots
    assert result.manifest.nodes["helper"].sandbox == sandbox


def test_a_subagent_may_declare_its_own(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/sandbox.py": SANDBOX.format(args=""),
            **SUBAGENT,
            "agent/subagents/helper/sandbox.py": SANDBOX.format(args="network=True"),
        }
    )
    result = compile_agent(root)
    assert result.manifest is not None, result.diagnostics.items
    helper = result.manifest.nodes["helper"].sandbox
    assert helper is not None and helper.network
    assert helper.logical_path == "agent/subagents/helper/sandbox.py"


def test_what_a_declaration_cannot_do_is_said_at_compile_time(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/sandbox.py": SANDBOX.format(
                args="provider='local', allow_hosts=['api.example.com']"
            ),
            "agent/sandbox/other.txt": "not a workspace\n",
        }
    )
    result = compile_agent(root)
    assert result.manifest is not None
    warnings = {d.code: d.message for d in result.diagnostics.items}
    assert set(warnings) == {
        "compile/sandbox-hosts-not-filtered",
        "compile/sandbox-local-unsafe",
        "discover/sandbox-unknown-entry",
    }
    assert "shares the whole network" in warnings["compile/sandbox-hosts-not-filtered"]
    sandbox = result.manifest.nodes["__root__"].sandbox
    assert sandbox is not None and sandbox.network  # hosts allowed: the network is shared


def test_seed_files_need_a_sandbox_and_must_fit_its_cap(make_app: AppFactory) -> None:
    unseeded = make_app({"agent/sandbox/workspace/a.txt": "a\n"})
    [error] = compile_agent(unseeded).diagnostics.items
    assert error.code == "discover/sandbox-workspace-without-sandbox"
    too_big = make_app(
        {
            "agent/sandbox.py": SANDBOX.format(args="limits=SandboxLimits(workspace_mb=1)"),
            "agent/sandbox/workspace/big.txt": "x" * (1024 * 1024 + 1),
        }
    )
    [error] = compile_agent(too_big).diagnostics.items
    assert error.code == "compile/sandbox-workspace-too-large"
    assert "over the workspace cap of 1 MiB" in error.message


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"provider": "docker"}, "one of bubblewrap, local"),
        ({"network": "yes"}, "True or False"),
        ({"allow_hosts": "example.com"}, "a list of host names"),
        ({"allow_hosts": ["http://example.com"]}, "a host name such as"),
        ({"limits": SandboxLimits(processes=0)}, "SandboxLimits(processes=0)"),
        ({"limits": {"cpu_seconds": 1}}, "SandboxLimits(...)"),
    ],
)
def test_define_sandbox_refuses_what_cannot_work(kwargs: dict[str, object], says: str) -> None:
    with pytest.raises(AuthoringError, match=f"^.*{says.replace('(', '.').replace(')', '.')}"):
        define_sandbox(**kwargs)  # type: ignore[arg-type]


def test_eve_info_shows_the_sandbox_and_marks_local_unsafe(make_app: AppFactory) -> None:
    agent = """
        from eve import define_agent
        default = define_agent(builtin_tools=["bash"])
    """
    runner = CliRunner()
    bare = make_app({"agent/agent.py": agent})
    compile_to_disk(bare)
    shown = runner.invoke(cli, ["--app-root", str(bare), "info"])
    assert "sandbox: none declared: commands run unconfined" in shown.output
    local = make_app(
        {"agent/agent.py": agent, "agent/sandbox.py": SANDBOX.format(args="provider='local'")}
    )
    compile_to_disk(local)
    shown = runner.invoke(cli, ["--app-root", str(local), "info"])
    assert "sandbox local (agent/sandbox.py): UNSAFE: no isolation, no network" in shown.output
    boxed = make_app({"agent/sandbox.py": SANDBOX.format(args="")})
    compile_to_disk(boxed)
    document = json.loads(runner.invoke(cli, ["--app-root", str(boxed), "info", "--json"]).output)
    assert document["agent"]["sandbox"] == {
        "source": "agent/sandbox.py",
        "provider": "bubblewrap",
        "unsafe": False,
        "network": False,
        "allow_hosts": [],
        "limits": {
            "cpu_seconds": 60,
            "memory_mb": 1024,
            "processes": 256,
            "file_size_mb": 100,
            "wall_seconds": 600,
            "workspace_mb": 256,
        },
        "workspace_files": 0,
    }
