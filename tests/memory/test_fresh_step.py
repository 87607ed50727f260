"""A fresh attempt of a durable step part undoes the saves of an earlier attempt that died
before its record was written (``StepAttempt``, ``MemoryHost.fresh_step``), on the session
database (SQLite, PostgreSQL) and on files: the rerun's model may answer with new call ids,
another text, or no save at all, and what remains is what the recorded attempt saved.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from eve._step_attempts import StepAttempt, fresh_step
from eve.auth.principal import OPERATOR, ref_of
from eve.authoring.context import ToolContext
from eve.manifest import DatabaseMemoryProvider, FileMemoryProvider, MemoryEntry
from eve.memory.access import MemoryHost, NodeMemory, Turn
from eve.memory.records import MemoryKey, NewEntry, SlotKey, Writer
from eve.memory.sql import DatabaseMemory, memory_engine
from eve.memory.tables import memories
from eve.runtime.memory import SAVE_TOOL, memory_tools

SESSION = "ses_fresh"
STEP = StepAttempt(step="turn_wf/step_1", session_id=SESSION, principal=OPERATOR)
OTHER_STEP = StepAttempt(step="turn_wf/step_0", session_id=SESSION, principal=OPERATOR)


@pytest.fixture(params=["sqlite", "postgres", "files"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[NodeMemory]:
    url = f"sqlite:///{tmp_path / 'eve.sqlite'}"
    if request.param == "postgres":
        given: str = request.getfixturevalue("postgres_url")
        url = "postgresql+psycopg://" + given.split("://", 1)[1]
    files = request.param == "files"
    slot = MemoryEntry(
        name="memory",
        description="",
        logical_path="memory.py",
        source_id="memory.py",
        scope="session",
        provider=FileMemoryProvider(directory="memory") if files else DatabaseMemoryProvider(),
    )
    host = MemoryHost(app_root=tmp_path, database_url=url, durable=True)
    yield NodeMemory(host, "__root__", [slot])
    host.close()


async def _save(memory: NodeMemory, text: str, call_id: str) -> None:
    tool = next(t for t in memory_tools(memory) if t.name == SAVE_TOOL)
    context = ToolContext(session_id=SESSION, call_id=call_id, tool_name=SAVE_TOOL)
    await tool.execute({"text": text}, context)


def _texts(memory: NodeMemory) -> list[str]:
    slot = memory.entry(None)
    key = memory.key(slot, Turn(session_id=SESSION, principal=OPERATOR))
    return sorted(r.text for r in memory.host.store(slot.provider).recent(key, limit=10))


async def test_a_fresh_attempt_deletes_what_the_unrecorded_attempt_saved(
    memory: NodeMemory,
) -> None:
    async with fresh_step(OTHER_STEP):  # a recorded step before: its entry stays
        await _save(memory, "the shop opens at nine", "call_0_0")
    async with fresh_step(STEP):  # the attempt that dies before its record
        await _save(memory, "lunch is at noon", "call_1_0")
        await _save(memory, "the manager is Ann", "call_1_1")
    assert _texts(memory) == ["lunch is at noon", "the manager is Ann", "the shop opens at nine"]
    async with fresh_step(STEP):  # asked again: another call id, another text
        assert _texts(memory) == ["the shop opens at nine"]
        await _save(memory, "lunch is at one", "call_1_7")
    assert _texts(memory) == ["lunch is at one", "the shop opens at nine"]
    async with fresh_step(STEP):  # asked once more, and this time it saves nothing
        pass
    assert _texts(memory) == ["the shop opens at nine"]


async def test_a_save_outside_a_durable_step_is_not_tagged(memory: NodeMemory) -> None:
    await _save(memory, "lunch is at noon", "call_0_0")  # in process: no step part
    async with fresh_step(STEP):
        pass
    assert _texts(memory) == ["lunch is at noon"]


def test_a_table_made_before_the_step_column_gains_it(tmp_path: Path) -> None:
    engine = memory_engine(f"sqlite:///{tmp_path / 'eve.sqlite'}")
    memories.metadata.create_all(engine)
    with engine.begin() as connection:  # the table as eve made it before steps were kept
        connection.exec_driver_sql("ALTER TABLE eve_memories DROP COLUMN step")
    store = DatabaseMemory(engine)
    slot = SlotKey(namespace="shop", node_id="__root__", slot="memory", scope="agent")
    where = MemoryKey(slot=slot, owner="")
    writer = Writer(principal=ref_of(OPERATOR), session_id=SESSION)
    store.save(
        where, NewEntry(id="m1", text="saved by a step", metadata={}, writer=writer, step="wf/s")
    )
    store.save(where, NewEntry(id="m2", text="saved in process", metadata={}, writer=writer))
    assert store.discard(where, "wf/s") == 1
    assert [r.id for r in store.recent(where, limit=5)] == ["m2"]
    store.close()
