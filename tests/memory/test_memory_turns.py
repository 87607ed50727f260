"""Memory slots in a compiled agent's turns, in process: the tools through the loop (directly
and through the catalog), recall into the system prompt (the caller's entries only, not the
history), and two agents sharing one database apart."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from eve._agent_setup import build_setup
from eve.auth.principal import Principal
from eve.compiler import compile_to_disk
from eve.context.active import EveContext
from eve.execution import TurnEnvironment, run_agent
from eve.execution.memory import with_memory
from eve.execution.setup import AgentSetup
from eve.memory.access import MemoryHost, Turn
from eve.messages import ToolResultMessage
from eve.models.function import FunctionModel
from eve.runtime import load_compiled_agent
from tests.conftest import write_files
from tests.execution.helpers import Script, calls, text

ALICE = Principal(id="alice", kind="user")
BOB = Principal(id="bob", kind="user")


def _app(root: Path, memory: dict[str, str]) -> Path:
    write_files(
        root,
        {
            "agent/agent.py": "from eve import define_agent\ndefault = define_agent()\n",
            "agent/instructions.md": "Help the shop's customers.\n",
            **memory,
        },
    )
    compile_to_disk(root)
    return root


async def _setup(root: Path, database: Path, script: Script) -> AgentSetup:
    built = await build_setup(
        load_compiled_agent(root), model=None, max_turns=None, notify=print, offline_fallback=True
    )
    host = MemoryHost(app_root=root, database_url=f"sqlite:///{database}")
    return replace(with_memory(built, host), client=FunctionModel(script))


def _env(session: str, principal: Principal) -> TurnEnvironment:
    return TurnEnvironment(
        session_id=session, context=EveContext(session_id=session, principal=principal)
    )


async def test_recall_puts_the_callers_best_entries_into_this_turns_prompt(tmp_path: Path) -> None:
    memory = """
        from eve.memory import define_memory
        default = define_memory(scope="principal", recall=2, description="about the customer")
    """
    root = _app(tmp_path / "shop", {"agent/memory.py": memory})
    script = Script(text("ok"), text("ok"))
    setup = await _setup(root, tmp_path / "eve.sqlite", script)
    assert setup.memory is not None
    for who, fact in ((ALICE, "prefers Friday deliveries"), (BOB, "prefers Monday deliveries")):
        await setup.memory.save(None, fact, {}, Turn(session_id=f"ses_{who.id}", principal=who))
    await setup.memory.save(None, "collects stamps", {}, Turn(session_id="ses_a", principal=ALICE))
    result = await run_agent(setup, "when should deliveries come?", env=_env("ses_2", ALICE))
    request = setup.client.requests[0]  # type: ignore[attr-defined]
    assert request.system.startswith("Help the shop's customers.")
    assert "prefers Friday deliveries" in request.system
    assert "Monday" not in request.system and "stamps" not in request.system
    assert "Friday" not in str(result.messages)  # the prompt's, not the history's
    # each turn recalls anew: nothing matches this message, so the prompt is as authored
    await run_agent(setup, "hello there", env=_env("ses_3", ALICE))
    assert setup.client.requests[1].system == "Help the shop's customers.\n"  # type: ignore[attr-defined]


async def test_the_tools_run_through_the_loop_and_through_the_catalog(tmp_path: Path) -> None:
    notes = """
        from eve.memory import define_memory, files
        default = define_memory(scope="session", provider=files(), expose="catalog")
    """
    root = _app(tmp_path / "shop", {"agent/memory/notes.py": notes})
    save = {"name": "eve__memory_save", "input": {"text": "the customer wants a blue bike"}}
    script = Script(
        calls(("eve__tool", save)),
        calls(("eve__tool", {"name": "eve__memory_search", "input": {"query": "bike colour"}})),
        text("done"),
    )
    setup = await _setup(root, tmp_path / "eve.sqlite", script)
    result = await run_agent(setup, "remember the bike", env=_env("ses_1", ALICE))
    requests = setup.client.requests  # type: ignore[attr-defined]
    offered = {t.name for t in requests[0].tools}
    assert {"eve__search", "eve__tool"} <= offered and "eve__memory_save" not in offered
    outputs = [m for m in result.messages if isinstance(m, ToolResultMessage)]
    assert "the customer wants a blue bike" in outputs[-1].content
    stored = list((root / ".eve" / "memory" / "shop" / "notes" / "session").glob("*.json"))
    assert len(stored) == 1 and "blue bike" in stored[0].read_text()


async def test_two_agents_sharing_a_database_never_see_each_others_entries(
    tmp_path: Path,
) -> None:
    memory = """
        from eve.memory import define_memory
        default = define_memory(scope="agent")
    """
    database = tmp_path / "shared.sqlite"
    shop = await _setup(_app(tmp_path / "shop", {"agent/memory.py": memory}), database, Script())
    bank = await _setup(_app(tmp_path / "bank", {"agent/memory.py": memory}), database, Script())
    assert shop.memory is not None and bank.memory is not None
    turn = Turn(session_id="ses_1", principal=ALICE)
    await shop.memory.save(None, "the shop closes at six", {}, turn)
    assert [h.record.text for h in await shop.memory.search(None, "closes", 5, turn)] == [
        "the shop closes at six"
    ]
    assert await bank.memory.search(None, "closes", 5, turn) == []
