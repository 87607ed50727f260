"""``eve.testing.agent_for_test``: a compiled agent with a test's model, stubs and answers."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pytest

from eve.errors import CompileFailed, UnknownStub
from eve.evals import Approve, Reply, ToolUse
from eve.models import FunctionModel, ModelRequest, respond
from eve.testing import agent_for_test
from tests.conftest import AppFactory

SHOP = {
    "agent/tools/charge.py": """
        from eve.tools import tool

        @tool
        def charge(amount: int) -> str:
            '''Charge the customer's card.'''
            raise AssertionError("the real charge ran in a test")
    """,
    "agent/tools/note.py": """
        from eve.context import define_state
        from eve.tools import tool

        notes = define_state("notes", 0)

        @tool
        def note(text: str) -> int:
            '''Take a note; how many this session took.'''
            return notes.update(lambda n: n + 1)
    """,
    "agent/tools/refund.py": """
        from eve.tools import tool
        from eve.tools.approval import always

        @tool(approval=always())
        def refund(amount: int) -> str:
            '''Refund the customer (a person approves).'''
            return f"refunded {amount}"
    """,
}


@pytest.fixture(autouse=True)
def temporary_copies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the copies go, to see that none is left behind."""
    copies = tmp_path / "copies"
    copies.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(copies))
    return copies


def shop(make_app: AppFactory) -> Path:
    return make_app(SHOP)


def test_a_scripted_turn_runs_the_stub_not_the_tool(make_app: AppFactory) -> None:
    script = [Reply(calls=[ToolUse("charge", {"amount": 12})]), Reply("Charged.")]
    charged: list[int] = []

    def stub(amount: int) -> str:
        charged.append(amount)
        return "ok"

    with agent_for_test(shop(make_app), model=script, tools={"charge": stub}) as agent:
        run = agent.run_sync("Charge me 12.")
    assert charged == [12]
    assert run.final_text == "Charged."
    assert [(c.name, c.input) for c in run.calls()] == [("charge", {"amount": 12})]
    assert run.failed_calls() == []
    assert run.model == "offline/script:test"


def test_turns_continue_one_conversation_in_a_copy_of_its_own(
    make_app: AppFactory, temporary_copies: Path
) -> None:
    root = make_app(
        {**SHOP, "workspace/seed.txt": "the app's", "servers/units.py": "# a server"},
        new_database=True,  # an app never run: the test shows it stays so
    )
    call = Reply(calls=[ToolUse("note", {"text": "hi"})])
    with agent_for_test(root, model=[call, Reply("1"), call, Reply("2")]) as agent:
        copy = agent.app_root
        assert copy.parent == temporary_copies and str(copy) in sys.path
        first = agent.run_sync("note it")
        second = agent.run_sync("again")
        # the app root's other files are linked, but the built-in file tools' workspace is
        # the copy's own
        assert (copy / "servers" / "units.py").read_text() == "# a server"
        assert agent.setup.workspace.is_relative_to(copy)
        assert not (copy / "workspace").is_symlink()
        assert not (copy / "workspace" / "seed.txt").exists()
    # define_state lives from turn to turn
    outputs = [e.data.output for e in (*first.events, *second.events) if e.type == "action.result"]
    assert outputs == ["1", "2"]
    assert len(second.messages) == len(first.messages) + 4
    assert len(agent.events) == len(first.events) + len(second.events)
    # the app is untouched, and the copy is gone with its modules and its sys.path entry
    assert not (root / ".eve").exists()
    assert [p.name for p in (root / "workspace").iterdir()] == ["seed.txt"]
    assert list(temporary_copies.iterdir()) == []
    assert str(copy) not in sys.path
    assert not [m for m in sys.modules.values() if str(copy) in str(getattr(m, "__file__", ""))]


def test_the_default_model_is_the_offline_one(make_app: AppFactory) -> None:
    with agent_for_test(make_app()) as agent:
        run = agent.run_sync("hello")
    assert run.model == "offline/test" and run.final_text.startswith("(offline/test)")


def test_a_function_model_sees_the_agents_tools(make_app: AppFactory) -> None:
    def model(request: ModelRequest):  # type: ignore[no-untyped-def]
        seen.append(sorted(tool.name for tool in request.tools))
        return respond(request, "fine", [])

    seen: list[list[str]] = []
    with agent_for_test(shop(make_app), model=FunctionModel(model)) as agent:
        assert agent.run_sync("hi").final_text == "fine"
    assert seen == [["charge", "note", "refund"]]


def test_answers_approve_and_an_unanswered_approval_is_denied(make_app: AppFactory) -> None:
    root = shop(make_app)
    script = [Reply(calls=[ToolUse("refund", {"amount": 5})]), Reply("Done.")]
    with agent_for_test(root, model=script, answers=[Approve("refund")]) as agent:
        approved = agent.run_sync("Refund 5.")
    assert approved.failed_calls() == [] and approved.unanswered == ()
    with agent_for_test(root, model=script) as agent:
        denied = agent.run_sync("Refund 5.")
        assert agent.unanswered == [
            "refund asked for approval and the case has no Approve('refund') or "
            "Deny('refund'); it was denied"
        ]
    assert denied.failed_calls() == ["refund"]


def test_a_stub_for_a_tool_the_agent_lacks_is_refused_and_leaves_nothing(
    make_app: AppFactory, temporary_copies: Path
) -> None:
    with pytest.raises(UnknownStub) as raised:
        agent_for_test(shop(make_app), tools={"charges": lambda amount: "ok"})
    assert (raised.value.tool, raised.value.known) == ("charges", ["charge", "note", "refund"])
    assert "charges" in str(raised.value) and "charge, note, refund" in str(raised.value)
    assert list(temporary_copies.iterdir()) == []


def test_an_agent_that_does_not_compile_is_compile_failed(
    make_app: AppFactory, temporary_copies: Path
) -> None:
    root = make_app({"agent/tools/broken.py": "from eve.tools import tool\nx = (\n"})
    with pytest.raises(CompileFailed) as raised:
        agent_for_test(root)
    assert [d.source_path for d in raised.value.diagnostics] == ["agent/tools/broken.py"]
    assert list(temporary_copies.iterdir()) == []


async def test_an_async_test_awaits_its_turns(make_app: AppFactory, temporary_copies: Path) -> None:
    # made inside a running event loop: preparing must not need the loop the test runs in
    async with agent_for_test(make_app(), model=[Reply("one"), Reply("two")]) as agent:
        assert (await agent.run("a")).final_text == "one"
        assert (await agent.run("b")).final_text == "two"
    assert list(temporary_copies.iterdir()) == []


def test_memory_is_the_copys_own_whatever_the_environment_names(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # eve run would open this database; a test must not (and here it could not)
    monkeypatch.setenv("EVE_DATABASE_URL", "postgresql://nobody@127.0.0.1:9/none")
    root = make_app(
        {
            "agent/memory.py": """
                from eve.memory import define_memory
                default = define_memory(scope="agent", description="facts about the shop")
            """
        },
        new_database=True,  # an app never run: the test shows it stays so
    )
    save = ToolUse("eve__memory_save", {"text": "the shop opens at 9"})
    search = ToolUse("eve__memory_search", {"query": "opens"})
    with agent_for_test(
        root, model=[Reply(calls=[save]), Reply(calls=[search]), Reply("ok")]
    ) as agent:
        run = agent.run_sync("remember it")
        assert (agent.app_root / ".eve" / "memory.sqlite").is_file()
    outputs = [e.data.output for e in run.events if e.type == "action.result"]
    assert run.failed_calls() == [] and "the shop opens at 9" in outputs[1]
    assert not (root / ".eve").exists()


def test_override_is_a_new_conversation_on_the_same_compiled_copy(
    make_app: AppFactory, temporary_copies: Path
) -> None:
    charge = [Reply(calls=[ToolUse("charge", {"amount": 3})]), Reply("Charged.")]
    with agent_for_test(
        shop(make_app), model=charge, tools={"charge": lambda amount: "ok"}
    ) as agent:
        first = agent.run_sync("Charge me 3.")
        other = agent.override(model=[Reply("No charge today.")])
        assert other.app_root == agent.app_root and other.events == []
        assert other.run_sync("Charge me 3.").final_text == "No charge today."
        # the stubs are kept: the real charge raises
        again = other.override(model=charge)
        assert again.run_sync("Charge me 3.").failed_calls() == []
        with pytest.raises(UnknownStub):
            agent.override(tools={"nothing": lambda: None})
        other.close()
        again.close()
        assert agent.app_root.is_dir()  # still the first agent's to close
        assert agent.events == list(first.events)  # the overrides' turns are their own
    assert list(temporary_copies.iterdir()) == []
