"""MCP tools in the agent loop: a compiled agent whose connections start real servers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from eve.compiler import compile_to_disk
from eve.connections.pool import close_current_pool
from eve.events import ActionPartial, ActionResult, ActionsRequested, ConnectionFailed, SessionEvent
from eve.execution import TurnEnvironment, run_agent
from eve.execution.setup import AgentSetup
from eve.execution.tool_calls import ApprovalRequest
from eve.messages import DocumentPart, ImagePart, TextPart, ToolResultMessage
from eve.models.events import ModelEvent
from eve.models.function import FunctionModel
from eve.runtime import ResolvedAgent, load_compiled_agent, resolve_agent
from tests.connections.mcp_test_server import PDF, PIXEL
from tests.connections.servers import forked_stdio_source, free_port
from tests.execution.helpers import Script, calls, text
from tests.execution.test_checkpoints import JsonRecorder

pytestmark = pytest.mark.asyncio(loop_scope="module")

# every call but the hang must answer within call_timeout_seconds: a second, which a loaded
# machine does not take; the hang outlasts it by 1.5 s, so it times out by construction
CALC = """
from eve.connections import define_mcp_connection
from eve.tools.approval import always

default = define_mcp_connection(
    description="Arithmetic on a test server.",
    {server},
    tools=["add", "fail", "hang", "chart", "steps", "resources"],
    approval={{"fail": always()}},
    call_timeout_seconds=1.0,
)
"""
DIRECT = """
from eve.connections import define_mcp_connection

default = define_mcp_connection(
    description="The same server, its add offered directly.",
    {server},
    tools=["add"],
    expose="tools",
)
"""
DOWN = """
from eve.connections import define_mcp_connection

default = define_mcp_connection(
    description="A server that is not running.",
    url="http://127.0.0.1:{port}/mcp",
    connect_timeout_seconds=2,
)
"""


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mcp-app")
    agent = root / "agent"
    (agent / "connections").mkdir(parents=True)
    (agent / "instructions.md").write_text("You calculate.\n")
    server = forked_stdio_source()
    (agent / "connections" / "calc.py").write_text(CALC.format(server=server))
    (agent / "connections" / "direct.py").write_text(DIRECT.format(server=server))
    (agent / "connections" / "down.py").write_text(DOWN.format(port=free_port()))
    compile_to_disk(root, use_cache=False)
    return root


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def agent(app: Path) -> AsyncIterator[ResolvedAgent]:
    loaded = load_compiled_agent(app)
    yield await resolve_agent(loaded.manifest, loaded.module_map, app_root=app)
    await close_current_pool()


async def run(
    agent: ResolvedAgent, *responses: list[ModelEvent], **env: Any
) -> tuple[FunctionModel, list[SessionEvent]]:
    events: list[SessionEvent] = []
    model = FunctionModel(Script(*responses))
    setup = AgentSetup(agent=agent, client=model)
    await run_agent(setup, "go", env=TurnEnvironment(on_event=events.append, **env))
    return model, events


def results(events: list[SessionEvent]) -> dict[str, ActionResult]:
    return {e.data.name: e for e in events if isinstance(e, ActionResult)}


async def test_catalog_tools_are_searched_and_called_direct_ones_offered(
    agent: ResolvedAgent,
) -> None:
    model, events = await run(
        agent,
        calls(("eve__search", {"query": "add"})),
        calls(
            ("eve__tool", {"name": "calc__add", "input": {"a": 2, "b": 3}}),
            ("direct__add", {"a": 4, "b": 5}),
        ),
        text("done"),
    )
    offered = [tool.name for tool in model.requests[0].tools]
    assert "direct__add" in offered and "calc__add" not in offered
    assert {"eve__search", "eve__tool"} <= set(offered)
    found = results(events)["eve__search"].data.output
    assert '"calc__add"' in found and "Add two integers." in found
    done = results(events)
    assert (done["calc__add"].data.output, done["calc__add"].data.connection) == ("5", "calc")
    assert (done["direct__add"].data.output, done["direct__add"].data.connection) == (
        "9",
        "direct",
    )
    requested = next(
        e for e in events if isinstance(e, ActionsRequested) and len(e.data.actions) == 2
    )
    assert [(a.name, a.via, a.connection) for a in requested.data.actions] == [
        ("calc__add", "eve__tool", "calc"),
        ("direct__add", None, "direct"),
    ]


async def test_a_server_that_is_down_is_a_named_event_and_its_tools_are_absent(
    agent: ResolvedAgent,
) -> None:
    model, events = await run(
        agent, calls(("eve__search", {"query": "anything"})), text("nothing found")
    )
    failed = [e for e in events if isinstance(e, ConnectionFailed)]
    assert [e.data.connection for e in failed] == ["down"]
    assert failed[0].data.error.startswith("MCPServerUnavailable: connection 'down'")
    assert not any(t.name.startswith("down__") for t in model.requests[1].tools)
    searched = next(e for e in events if isinstance(e, ActionResult))
    assert events.index(failed[0]) < events.index(searched)  # its error before the search's


async def test_the_catalogs_servers_are_listed_only_when_the_turn_needs_them(
    agent: ResolvedAgent,
) -> None:
    """A turn that never searches the catalog nor calls a server's tool through it lists
    only the connection every request offers (``direct``): ``down`` is never tried."""
    recorder = JsonRecorder()
    model, events = await run(agent, text("nothing to call"), recorder=recorder)
    assert not [e for e in events if isinstance(e, ConnectionFailed)]
    assert [k for k in recorder.produced if k.startswith("connections.")] == ["connections.list"]
    offered = [tool.name for tool in model.requests[0].tools]
    assert "direct__add" in offered and {"eve__search", "eve__tool"} <= set(offered)


async def test_a_call_of_a_server_tool_not_listed_yet_is_announced_once_it_is(
    agent: ResolvedAgent,
) -> None:
    """Without a search first, ``eve__tool`` naming a catalog server's tool lists the
    servers, and ``actions.requested`` names the tool it runs as."""
    recorder = JsonRecorder()
    _, events = await run(
        agent,
        calls(("eve__tool", {"name": "calc__add", "input": {"a": 1, "b": 2}})),
        text("3"),
        recorder=recorder,
    )
    [requested] = [e for e in events if isinstance(e, ActionsRequested)]
    assert [(a.name, a.via, a.connection) for a in requested.data.actions] == [
        ("calc__add", "eve__tool", "calc")
    ]
    assert results(events)["calc__add"].data.output == "3"
    assert "connections.list.catalog" in recorder.produced
    assert "step:0:listed:0" in recorder.produced


async def test_input_is_checked_against_the_servers_schema_before_any_call(
    agent: ResolvedAgent,
) -> None:
    _, events = await run(agent, calls(("direct__add", {"a": "two", "b": 3})), text("ok"))
    result = results(events)["direct__add"].data
    assert result.status == "failed" and "invalid input" in result.output


async def test_approval_is_asked_for_an_mcp_tool_and_its_failure_is_the_models_error(
    agent: ResolvedAgent,
) -> None:
    asked: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> bool:
        asked.append(request)
        return request.input.get("reason") == "yes"

    _, events = await run(
        agent,
        calls(
            ("eve__tool", {"name": "calc__fail", "input": {"reason": "no"}}),
            ("eve__tool", {"name": "calc__fail", "input": {"reason": "yes"}}),
        ),
        text("ok"),
        approve=approve,
    )
    assert [(r.tool_name, r.rule) for r in asked] == [("calc__fail", "always")] * 2
    outputs = [(e.data.status, e.data.output) for e in events if isinstance(e, ActionResult)]
    assert outputs[0][0] == "rejected"
    assert outputs[1][0] == "failed"
    assert outputs[1][1].startswith("MCPToolFailed: connection 'calc': tool 'fail' failed: ")
    assert outputs[1][1].endswith("failed on purpose: yes")


async def test_a_hanging_tool_ends_in_a_timeout_result_not_a_hung_turn(
    agent: ResolvedAgent,
) -> None:
    _, events = await run(
        agent, calls(("eve__tool", {"name": "calc__hang", "input": {"seconds": 2.5}})), text("ok")
    )
    result = results(events)["calc__hang"].data
    assert result.status == "failed"
    assert result.output.startswith("MCPCallTimedOut: connection 'calc': tool 'hang'")


async def test_a_replayed_turn_reads_the_recorded_listing(agent: ResolvedAgent) -> None:
    recorder = JsonRecorder()
    script = (calls(("eve__search", {"query": "add"})), text("one"))
    first, _ = await run(agent, *script, recorder=recorder)
    assert {"connections.list", "connections.list.catalog"} <= set(recorder.produced)
    # the turn crashed after the catalog's listing: the listings and the part before are
    # on record, and the part after the listing is not
    kept = ("connections.list", "connections.list.catalog", "step:0")
    recorder.log = {key: recorder.log[key] for key in kept}
    recorder.produced.clear()
    replayed, events = await run(agent, *script[1:], recorder=recorder)
    assert not [k for k in recorder.produced if k.startswith("connections.")]
    assert recorder.produced[0] == "step:0:listed:0"
    assert [t.name for t in replayed.requests[0].tools] == [t.name for t in first.requests[1].tools]
    assert '"calc__add"' in results(events)["eve__search"].data.output


async def test_images_and_documents_of_a_result_reach_the_model_as_parts(
    agent: ResolvedAgent,
) -> None:
    model, events = await run(
        agent, calls(("eve__tool", {"name": "calc__chart", "input": {}})), text("a chart")
    )
    [result] = [m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)]
    kinds = [type(part).__name__ for part in result.parts]
    assert kinds == ["TextPart", "ImagePart", "TextPart", "DocumentPart", "TextPart"]
    image, document, audio = result.parts[1], result.parts[3], result.parts[4]
    said = result.parts[2]
    assert isinstance(said, TextPart)
    assert said.text == "[resource file:///reports/q3.pdf (application/pdf)]"
    assert isinstance(image, ImagePart) and image.data == PIXEL
    assert image.media_type == "image/png"
    assert isinstance(document, DocumentPart) and document.data == PDF
    assert document.name == "q3.pdf"
    assert isinstance(audio, TextPart) and "takes no audio" in audio.text
    assert results(events)["calc__chart"].data.status == "completed"


async def test_a_servers_progress_notifications_are_the_calls_partials(
    agent: ResolvedAgent,
) -> None:
    _, events = await run(
        agent,
        calls(("eve__tool", {"name": "calc__steps", "input": {"count": 3}})),
        text("stepped"),
    )
    partials = [e.data for e in events if isinstance(e, ActionPartial)]
    assert [p.partial for p in partials] == [
        {"progress": done, "total": 3, "message": f"step {done}"} for done in (1, 2, 3)
    ]
    result = results(events)["calc__steps"]
    assert {p.call_id for p in partials} == {result.data.call_id}
    assert result.data.output == "3 steps"


async def test_the_model_reads_a_servers_resource_through_the_built_in(
    agent: ResolvedAgent,
) -> None:
    uri = "file:///notes/readme.txt"
    _, events = await run(
        agent,
        calls(("eve__tool", {"name": "calc__resources", "input": {"uri": uri}})),
        text("read"),
    )
    result = results(events)["calc__resources"].data
    assert result.status == "completed"
    assert result.output == f"[resource {uri} (text/plain)]\nread me first"
