"""The file memory provider shared by processes (``eve serve --workers 2``): two real
processes saving into one scope at once lose no entry, and each sees the other's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from eve.memory.file_store import FileMemory
from tests.memory.test_stores import ALICE, key

#: entries each process saves; every save reads and replaces the whole scope file, so
#: without a lock two processes overwrite each other's entries within a few saves
SAVES = 60

_WRITER = """
import sys
from pathlib import Path
from eve.auth.principal import PrincipalRef
from eve.memory.file_store import FileMemory
from eve.memory.records import MemoryKey, NewEntry, SlotKey, Writer

alice = PrincipalRef(id="alice", kind="user")
notes = SlotKey(namespace="shop", node_id="__root__", slot="notes", scope="principal")
scope, by = MemoryKey(slot=notes, owner="user:alice"), Writer(principal=alice, session_id="s")
directory, name, saves = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
store = FileMemory(directory)
print("ready", flush=True)
sys.stdin.readline()  # both start saving at once
for i in range(saves):
    store.save(scope, NewEntry(id=f"{name}-{i}", text=f"{name} fact {i}", metadata={}, writer=by))
"""


def test_two_processes_saving_into_one_scope_lose_nothing(tmp_path: Path) -> None:
    directory = tmp_path / "memory"
    root = Path(__file__).resolve().parents[2]
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(directory), name, str(SAVES)],
            cwd=root,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for name in ("first", "second")
    ]
    try:
        for w in writers:
            assert w.stdout is not None and w.stdout.readline() == "ready\n"
        for w in writers:
            assert w.stdin is not None
            w.stdin.write("go\n")
            w.stdin.close()
        assert [w.wait(timeout=60) for w in writers] == [0, 0]
    finally:
        for w in writers:
            w.kill()
            w.wait()
    entries = FileMemory(directory).recent(key(ALICE), limit=10 * SAVES)
    assert sorted(e.id for e in entries) == sorted(
        f"{name}-{i}" for name in ("first", "second") for i in range(SAVES)
    )
