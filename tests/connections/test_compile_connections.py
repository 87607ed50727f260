"""Compiling connections/: the declaration recorded, nothing connected, and the diagnostics."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from eve.compiler import compile_agent
from eve.manifest import HttpServer, StdioServer
from tests.connections.connection_trees import app

HTTP = """
from eve.connections import define_mcp_connection, from_env

default = define_mcp_connection(
    description="Docs search.",
    url="https://docs.example.invalid/mcp",
    headers={"X-Api-Key": from_env("DOCS_KEY", prefix="Key ")},
    get_token=lambda: "never-compiled",
    block_tools=["delete"],
)
"""
STDIO = """
from eve.connections import define_mcp_connection
from eve.tools.approval import once

default = define_mcp_connection(
    description="Local files.",
    command=["/nonexistent/server", "--flag"],
    env={"MODE": "read-only"},
    tools=["read"],
    approval={"read": once()},
    expose="tools",
)
"""


def codes(root: Path) -> list[tuple[str, str | None, int | None]]:
    result = compile_agent(root)
    return [
        (d.code, d.source_path, d.line) for d in result.diagnostics.items if d.severity == "error"
    ]


def test_the_declaration_is_recorded_without_secrets_or_connecting(tmp_path: Path) -> None:
    result = compile_agent(app(tmp_path, {"docs.py": HTTP, "files.py": STDIO}))
    assert result.manifest is not None, result.diagnostics.items
    docs, files = result.manifest.nodes["__root__"].connections
    assert isinstance(docs.server, HttpServer) and isinstance(files.server, StdioServer)
    assert (docs.name, docs.expose, docs.block_tools, docs.server.has_token) == (
        "docs",
        "catalog",
        ["delete"],
        True,
    )
    assert docs.server.headers["X-Api-Key"].env == "DOCS_KEY"
    assert (files.server.command, files.server.env, files.allow_tools) == (
        ["/nonexistent/server", "--flag"],
        {"MODE": "read-only"},
        ["read"],
    )
    assert files.approval_by_tool["read"].kind == "once" and files.expose == "tools"
    assert "never-compiled" not in msgspec.json.encode(result.manifest).decode()
    binding = result.manifest.nodes["__root__"].bindings["connections/docs.py"]
    assert (binding.usage.compile, binding.usage.runtime_entry) == (True, True)


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("Docs.py", "discover/connection-name-invalid"),
        ("docs__v2.py", "discover/connection-name-invalid"),
        ("eve_docs.py", "discover/connection-name-invalid"),
        (f"{'d' * 41}.py", "discover/connection-name-invalid"),
    ],
)
def test_a_bad_connection_name_is_a_diagnostic(tmp_path: Path, name: str, code: str) -> None:
    assert codes(app(tmp_path, {name: HTTP})) == [(code, f"agent/connections/{name}", None)]


def test_a_tool_with_a_connections_prefix_collides(tmp_path: Path) -> None:
    found = codes(app(tmp_path, {"docs.py": HTTP}, tools=("docs__search",)))
    assert found == [("discover/connection-name-collision", "agent/connections/docs.py", None)]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ('url="https://a.invalid/mcp", command=["x"]', "not both"),
        ("", "and got neither"),
        ('url="https://a.invalid/mcp", timeout=3', "unknown key(s) 'timeout'"),
        ('url="https://a.invalid/mcp", headers={"X-Key": "sk-literal"}', "from_env"),
        ('url="ftp://a.invalid"', "http(s) URL"),
    ],
)
def test_an_impossible_declaration_is_a_diagnostic_with_its_line(
    tmp_path: Path, arguments: str, message: str
) -> None:
    source = (
        "from eve.connections import define_mcp_connection\n\n"
        f'default = define_mcp_connection(description="D.", {arguments})\n'
    )
    result = compile_agent(app(tmp_path, {"bad.py": source}))
    [diagnostic] = [d for d in result.diagnostics.items if d.severity == "error"]
    assert (diagnostic.code, diagnostic.source_path, diagnostic.line) == (
        "compile/import-failed",
        "agent/connections/bad.py",
        3,
    )
    assert message in diagnostic.message
