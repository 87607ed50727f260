"""``eve memory``: list, search and forget over the database ``eve serve`` would open, all of
it or what one principal saved or is the subject of."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from eve.auth.principal import Principal
from eve.cli import main
from eve.compiler import compile_to_disk
from eve.manifest import MemoryEntry
from eve.memory.access import MemoryHost, NodeMemory, Turn
from eve.runtime.load import read_manifest
from tests.conftest import AppFactory

ALICE = Principal(id="https://id.example#alice", kind="user")
BOB = Principal(id="https://id.example#bob", kind="user")
MEMORY = """
    from eve.memory import define_memory
    default = define_memory(scope="principal")
"""


async def _seeded(root: Path) -> None:
    compile_to_disk(root)
    manifest = read_manifest(root / ".eve" / "compile" / "compiled-agent-manifest.json")
    entries: list[MemoryEntry] = manifest.nodes["__root__"].memory
    url = f"sqlite:///{root / '.eve' / 'sessions' / 'eve.sqlite'}"
    (root / ".eve" / "sessions").mkdir(parents=True, exist_ok=True)
    memory = NodeMemory(MemoryHost(app_root=root, database_url=url), "__root__", entries)
    for who, text in ((ALICE, "alice likes oolong tea"), (BOB, "bob likes black tea")):
        await memory.save(None, text, {}, Turn(session_id="ses_1", principal=who))


def _eve(root: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["-C", str(root), "memory", *args])
    return result.exit_code, result.output


async def test_list_search_and_forget_by_principal(make_app: AppFactory) -> None:
    root = make_app({"agent/memory.py": MEMORY})
    await _seeded(root)
    code, out = _eve(root, "list", "--json")
    assert code == 0 and {e["text"] for e in json.loads(out)} == {
        "alice likes oolong tea",
        "bob likes black tea",
    }
    code, out = _eve(root, "search", "oolong", "--json")
    [found] = json.loads(out)
    assert found["principal"] == {"id": ALICE.id, "kind": "user"}
    code, out = _eve(root, "list", "--principal", f"user:{BOB.id}")
    assert code == 0 and "bob likes black tea" in out and "alice" not in out
    code, out = _eve(root, "forget", "--all", "--principal", f"user:{ALICE.id}")
    assert code == 0 and "forgot 1 memory" in out
    code, out = _eve(root, "forget", found["id"])
    assert code == 1 and "forgot 0 memories" in out
    code, out = _eve(root, "list", "--json")
    assert [e["text"] for e in json.loads(out)] == ["bob likes black tea"]


def test_refusals_name_what_to_fix(make_app: AppFactory) -> None:
    root = make_app({"agent/memory.py": MEMORY})
    code, out = _eve(root, "list")
    assert code == 1 and "run eve compile" in out
    compile_to_disk(root)
    code, out = _eve(root, "list", "--principal", "alice")
    assert code == 2 and "KIND:ID" in out
    code, out = _eve(root, "list", "--slot", "nope")
    assert code == 1 and "no memory slot 'nope'" in out
    code, out = _eve(root, "forget", "--all")
    assert code == 2 and "--all needs --slot or --principal" in out
