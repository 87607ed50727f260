"""Hooks through discovery, compile and resolve: manifest entries, module map, diagnostics."""

from __future__ import annotations

from pathlib import Path

import pytest

from eve.compiler import compile_agent, compile_to_disk
from eve.errors import InvalidModuleExport
from eve.manifest import HookEntry
from eve.runtime import load_compiled_agent, resolve_agent
from tests.conftest import AppFactory, write_files

COUNTER = """
    from eve.context import define_state
    from eve.hooks import define_hook
    from agent.lib.counts import bump

    async def started(event):
        bump()

    default = define_hook(events={"turn.started": started, "turn.completed": print})
"""
LIB = """
    from eve.context import define_state
    turns = define_state("turns", 0)

    def bump():
        turns.update(lambda n: n + 1)
"""


def codes(root: Path) -> list[tuple[str, str | None]]:
    return [(d.code, d.source_path) for d in compile_agent(root).diagnostics.items]


def test_a_hook_becomes_a_manifest_entry_and_a_runtime_module(make_app: AppFactory) -> None:
    root = make_app({"agent/hooks/counter.py": COUNTER, "agent/lib/counts.py": LIB})
    result = compile_agent(root)
    assert result.manifest is not None, result.diagnostics.items
    node = result.manifest.nodes["__root__"]
    assert node.hooks == [
        HookEntry(
            name="counter",
            logical_path="agent/hooks/counter.py",
            source_id="hooks/counter.py",
            export_name="default",
            events=["turn.started", "turn.completed"],
        )
    ]
    assert "hooks/counter.py" in node.compile_loads
    assert "hooks/counter.py" in node.runtime_roots
    # the hook's imports are in its runtime closure, as a tool's are
    assert node.bindings["lib/counts.py"].usage.runtime_entry
    module_map = result.artifacts[".eve/compile/module_map.py"].decode()
    assert '"hooks/counter.py": _lazy("agent.hooks.counter")' in module_map
    assert result.discovery.manifest().nodes["__root__"].hooks == ["agent/hooks/counter.py"]


async def test_resolve_reattaches_the_subscribers(make_app: AppFactory) -> None:
    root = make_app({"agent/hooks/counter.py": COUNTER, "agent/lib/counts.py": LIB})
    compile_to_disk(root)
    loaded = load_compiled_agent(root)
    agent = await resolve_agent(loaded.manifest, loaded.module_map)
    [hook] = agent.hooks
    assert hook.name == "counter"
    assert list(hook.definition.events) == ["turn.started", "turn.completed"]
    assert hook.definition.events["turn.completed"] is print


async def test_a_hook_changed_since_compile_is_refused(make_app: AppFactory) -> None:
    root = make_app({"agent/hooks/counter.py": COUNTER, "agent/lib/counts.py": LIB})
    compile_to_disk(root)
    write_files(
        root,
        {
            "agent/hooks/counter.py": """
                from eve.hooks import define_hook
                default = define_hook(events={"turn.failed": print})
            """
        },
    )
    loaded = load_compiled_agent(root)
    with pytest.raises(InvalidModuleExport, match=r"now subscribes to turn\.failed"):
        await resolve_agent(loaded.manifest, loaded.module_map)


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {"agent/hooks/Audit.py": "x = 1\n"},
            ("discover/hook-name-invalid", "agent/hooks/Audit.py"),
        ),
        ({"agent/hooks/notes.md": "hi\n"}, ("discover/unknown-file", "agent/hooks/notes.md")),
        (
            {"agent/hooks/empty.py": "x = 1\n"},
            ("compile/export-missing", "agent/hooks/empty.py"),
        ),
        (
            {"agent/hooks/bad.py": "default = 42\n"},
            ("compile/export-invalid", "agent/hooks/bad.py"),
        ),
        (
            {
                "agent/hooks/tooly.py": """
                    from eve.tools import tool
                    @tool
                    def tooly() -> str:
                        '''A tool in the wrong place.'''
                        return ""
                """
            },
            ("compile/wrong-definition-kind", "agent/hooks/tooly.py"),
        ),
        (
            {
                "agent/hooks/typo.py": """
                    from eve.hooks import define_hook
                    default = define_hook(events={"turn.complete": print})
                """
            },
            ("compile/import-failed", "agent/hooks/typo.py"),
        ),
    ],
)
def test_hook_mistakes_are_diagnostics(
    make_app: AppFactory, files: dict[str, str], expected: tuple[str, str]
) -> None:
    assert expected in codes(make_app(files))


def test_an_unknown_event_names_the_closest_one(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/hooks/typo.py": """
                from eve.hooks import define_hook
                default = define_hook(events={"turn.complete": print})
            """
        }
    )
    [diagnostic] = [d for d in compile_agent(root).diagnostics.items if d.severity == "error"]
    assert "did you mean 'turn.completed'?" in diagnostic.message


def test_module_state_in_a_hook_is_warned_about(make_app: AppFactory) -> None:
    root = make_app(
        {
            "agent/hooks/leaky.py": """
                from eve.hooks import define_hook
                counts = {"n": 0}

                def on_turn(event):
                    counts["n"] += 1

                default = define_hook(events={"turn.completed": on_turn})
            """
        }
    )
    [warning] = [d for d in compile_agent(root).diagnostics.items if d.severity == "warning"]
    assert warning.code == "compile/module-state-mutation"
    assert "inside the hook" in warning.message
