"""Memory slots compiled: ``memory.py`` and ``memory/<name>.py`` into manifest entries (in
any node), their naming rules, and ``define_memory``'s refusals as compile diagnostics."""

from __future__ import annotations

import pytest

from eve.authoring.memory import define_memory, files
from eve.compiler import compile_agent
from eve.errors import AuthoringError
from eve.manifest import DatabaseMemoryProvider, FileMemoryProvider
from tests.conftest import AppFactory

SLOT = """
    from eve.memory import define_memory, files
    default = define_memory({args})
"""
SUBAGENT = {
    "agent/subagents/helper/agent.py": (
        "from eve import define_agent\ndefault = define_agent(description='helps')\n"
    ),
    "agent/subagents/helper/instructions.md": "Help.\n",
}


def test_slots_compile_into_their_nodes_entries(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/memory/notes.py": SLOT.format(args="scope='session', recall=3"),
            "agent/memory/people.py": SLOT.format(
                args="provider=files('data/mem'), search='semantic', expose='catalog'"
            ),
            **SUBAGENT,
            "agent/subagents/helper/memory.py": SLOT.format(args="scope='agent', namespace='h'"),
        }
    )
    result = compile_agent(root)
    assert result.manifest is not None, result.diagnostics.items
    root_node = result.manifest.nodes["__root__"]
    notes, people = root_node.memory
    assert (notes.name, notes.scope, notes.recall, notes.source_id) == (
        "notes",
        "session",
        3,
        "memory/notes.py",
    )
    assert notes.provider == DatabaseMemoryProvider()
    assert people.provider == FileMemoryProvider(directory="data/mem")
    assert (people.scope, people.search, people.expose) == ("principal", "semantic", "catalog")
    [helper] = result.manifest.nodes["helper"].memory
    assert (helper.name, helper.scope, helper.namespace) == ("memory", "agent", "h")
    # data only: read at compile time, never a runtime root
    assert "memory/notes.py" in root_node.compile_loads
    assert "memory/notes.py" not in root_node.runtime_roots


def test_memory_py_beside_memory_dir_and_bad_names_are_errors(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/memory.py": SLOT.format(args=""),
            "agent/memory/notes.py": SLOT.format(args=""),
            **SUBAGENT,
            "agent/subagents/helper/memory/Bad-Name.py": SLOT.format(args=""),
        }
    )
    result = compile_agent(root)
    codes = [d.code for d in result.diagnostics.items if d.severity == "error"]
    assert codes == ["discover/memory-file-and-directory", "discover/memory-name-invalid"]


def test_a_refused_definition_is_a_compile_error_naming_the_file(make_app: AppFactory) -> None:
    root = make_app({"agent/memory.py": SLOT.format(args="recall=50")})
    result = compile_agent(root)
    [error] = [d for d in result.diagnostics.items if d.severity == "error"]
    assert error.source_path == "agent/memory.py" and "recall=50" in error.message


@pytest.mark.parametrize(
    "kwargs",
    [{"scope": "team"}, {"search": "fuzzy"}, {"expose": "hidden"}, {"recall": -1}],
)
def test_define_memory_refuses_impossible_arguments(kwargs: dict[str, object]) -> None:
    with pytest.raises(AuthoringError):
        define_memory(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("directory", ["/tmp/x", "../outside", ""])
def test_files_stays_inside_the_app(directory: str) -> None:
    with pytest.raises(AuthoringError, match="relative to the app root"):
        files(directory)
