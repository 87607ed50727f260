"""The a2a channel through the a2a-sdk's own client: answers, tools, approvals, streams
dropped and resumed, cancels, refusals and the agent card."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from a2a.client import A2AClientError
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
)
from a2a.utils.errors import (
    ContentTypeNotSupportedError,
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from bench.channel_probes import a2a as a2a_probe
from tests.channels.a2a_client import (
    CANCELED,
    CHANNEL,
    COMPLETED,
    INPUT_REQUIRED,
    PATH,
    TOKEN,
    a2a_client,
    answer_of,
    card_of,
    data_of,
    final_state,
    read,
    streamed_text,
    task_of,
    text,
)
from tests.conftest import REPO_ROOT, wait_for_file, write_files
from tests.sessions.apps import TOOLS, call, say
from tests.sessions.harness import script
from tests.sessions.inprocess import ROOT, InProcessServer

AGENT = """
    from eve import define_agent
    default = define_agent(
        model="offline/script:script.json", description="Ships anvils.", limits={"max_turns": 5}
    )
"""
SKILL = "---\ndescription: How returns work.\n---\nReturns take 30 days.\n"
#: every session replays it from the top: turn 0 answers, turn 1 asks to ship, turn 2 waits
SCRIPT = [
    say("hello from eve"),
    call("ship", item="anvil"),
    say("shipped it"),
    call("slowly", seconds=30),
    say("stopped"),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessServer]:
    root = tmp_path_factory.mktemp("a2a")
    write_files(
        root,
        {
            "agent/agent.py": AGENT,
            "agent/instructions.md": "Follow the script.\n",
            "agent/skills/returns.md": SKILL,
            "agent/tools/ship.py": TOOLS["ship"],
            "agent/tools/slowly.py": TOOLS["slowly"],
        },
    )
    script(root, SCRIPT)
    running = InProcessServer(
        root, env={"EVE_API_TOKEN": TOKEN}, token=TOKEN, channels=[CHANNEL]
    ).start()
    yield running
    running.stop()


def session_count(server: InProcessServer) -> int:
    return len(server.get("/sessions", params={"limit": 100}).json()["sessions"])


async def test_the_card_says_what_the_agent_is_where_to_call_it_and_how(
    server: InProcessServer,
) -> None:
    card = await card_of(server)
    assert card.name == server.app_root.name and card.description == "Ships anvils."
    [interface] = card.supported_interfaces
    assert interface.url == "http://127.0.0.1" + PATH
    assert (interface.protocol_binding, interface.protocol_version) == ("JSONRPC", "1.0")
    assert card.capabilities.streaming and not card.capabilities.push_notifications
    assert len(set(card.default_input_modes)) == len(card.default_input_modes)
    assert {"text/plain", "image/png", "application/pdf"} <= set(card.default_input_modes)
    assert [(s.id, s.description) for s in card.skills] == [("returns", "How returns work.")]
    assert card.security_schemes["bearer"].http_auth_security_scheme.scheme == "Bearer"
    assert list(card.security_requirements[0].schemes) == ["bearer"]


async def test_a_plain_answer_streams_and_reads_back_as_a_task(server: InProcessServer) -> None:
    async with a2a_client(server) as client:
        items = await read(client, text("hi"))
        task = task_of(items)
        assert task.id == f"{task.context_id}:turn_0"
        assert final_state(items) == COMPLETED
        assert streamed_text(items) == "hello from eve"
        got = await client.get_task(GetTaskRequest(id=task.id))
        listed = await client.list_tasks(ListTasksRequest(context_id=task.context_id))
    assert got.status.state == COMPLETED and answer_of(got) == "hello from eve"
    assert [m.role for m in got.history] == [Role.ROLE_USER, Role.ROLE_AGENT]
    assert got.history[0].parts[0].text == "hi"
    assert [a.artifact_id for a in got.artifacts] == ["text-0"]
    assert [t.id for t in listed.tasks] == [task.id]


async def test_a_blocking_send_answers_once_per_message_id(server: InProcessServer) -> None:
    async with a2a_client(server, streaming=False) as client:
        first = task_of(await read(client, text("hi", message_id="m-1")))
        again = task_of(await read(client, text("hi", message_id="m-1")))
    assert first.status.state == COMPLETED and answer_of(first) == "hello from eve"
    # the same message id is the same turn: nothing was sent twice
    assert again.id == first.id
    events = server.events(first.context_id)
    assert [e["type"] for e in events].count("turn.started") == 1


async def test_an_approval_is_answered_through_the_protocol_after_a_dropped_stream(
    server: InProcessServer,
) -> None:
    async with a2a_client(server) as client:
        context = task_of(await read(client, text("hi"))).context_id
        # the stream of the next turn drops after its first item ...
        [first] = await read(client, text("ship it", context_id=context), stop_after=1)
        task_id = first.task.id
        # ... and the task is read again from the log, up to where it waits
        resumed = [item async for item in client.subscribe(SubscribeToTaskRequest(id=task_id))]
        assert final_state(resumed) == INPUT_REQUIRED
        waiting = await client.get_task(GetTaskRequest(id=task_id))
        [request] = waiting.status.message.parts[1].data.struct_value["inputRequests"]
        assert request["kind"] == "tool-approval" and request["toolName"] == "ship"
        approve = text("approve", context_id=context, task_id=task_id)
        answered = await read(client, approve)
        # the same answer sent again (a retry) is the task as it is: nothing runs twice
        [retried] = await read(client, approve)
        assert retried.task.status.state == COMPLETED
        with pytest.raises(UnsupportedOperationError, match="takes no more messages"):
            await read(client, text("approve", task_id=task_id))
    assert final_state(answered) == COMPLETED
    [result] = data_of(answered, "toolResult")
    assert (result["status"], result["output"]) == ("completed", "shipped anvil")
    assert streamed_text(answered).endswith("shipped it")
    assert (server.app_root / "shipped.log").read_text() == "anvil\n"
    async with a2a_client(server) as client:
        page = await client.list_tasks(ListTasksRequest(context_id=context, page_size=1))
        rest = await client.list_tasks(
            ListTasksRequest(context_id=context, page_token=page.next_page_token)
        )
    assert [t.id for t in page.tasks] == [task_id] and page.total_size == 2
    assert [t.id for t in rest.tasks] == [f"{context}:turn_0"] and not rest.next_page_token


async def test_a_cancel_stops_a_running_task(server: InProcessServer) -> None:
    async with a2a_client(server, streaming=False) as client:
        context = task_of(await read(client, text("hi"))).context_id
        parked = task_of(await read(client, text("ship it", context_id=context)))
        await read(client, text("deny", task_id=parked.id))
        request = text("wait", context_id=context)
        request.configuration.return_immediately = True
        running = task_of(await read(client, request))
        await asyncio.to_thread(wait_for_file, server.app_root / f"slowly-{context}.started")
        cancelled = await client.cancel_task(CancelTaskRequest(id=running.id))
    assert running.id == f"{context}:turn_2"
    assert cancelled.status.state == CANCELED


async def test_a_tool_call_shows_in_the_stream(server: InProcessServer) -> None:
    async with a2a_client(server) as client:
        context = task_of(await read(client, text("hi"))).context_id
        items = await read(client, text("ship it", context_id=context))
    [calls] = data_of(items, "toolCalls")
    assert [(c["name"], c["input"]) for c in calls] == [("ship", {"item": "anvil"})]
    assert final_state(items) == INPUT_REQUIRED


async def test_a_cancel_ends_a_waiting_task(server: InProcessServer) -> None:
    async with a2a_client(server, streaming=False) as client:
        context = task_of(await read(client, text("hi"))).context_id
        parked = task_of(await read(client, text("ship it", context_id=context)))
        assert parked.status.state == INPUT_REQUIRED
        cancelled = await client.cancel_task(CancelTaskRequest(id=parked.id))
        assert cancelled.status.state == CANCELED
        with pytest.raises(TaskNotCancelableError, match="has ended"):
            await client.cancel_task(CancelTaskRequest(id=parked.id))
        # a message to the ended task is refused: a new task takes it
        with pytest.raises(UnsupportedOperationError, match="takes no more messages"):
            await read(client, text("approve", context_id=context, task_id=parked.id))
    assert "turn.cancelled" in [e["type"] for e in server.events(context)]


async def test_bad_input_is_a_protocol_error_and_stores_nothing(server: InProcessServer) -> None:
    async with a2a_client(server, streaming=False) as client:
        context = task_of(await read(client, text("hi"))).context_id
        sessions, events = session_count(server), len(server.events(context))
        with pytest.raises(InvalidParamsError):
            await read(client, text(""))
        with pytest.raises(InvalidParamsError, match="no context ses_nope"):
            await read(client, text("hi", context_id="ses_nope"))
        with pytest.raises(InvalidParamsError, match="without a mediaType"):
            file = Message(message_id="f-1", role=Role.ROLE_USER, parts=[Part(raw=b"%PDF")])
            await read(client, SendMessageRequest(message=file))
        with pytest.raises(ContentTypeNotSupportedError, match="application/zip"):
            zipped = Part(raw=b"PK", media_type="application/zip")
            file = Message(message_id="f-2", role=Role.ROLE_USER, parts=[zipped])
            await read(client, SendMessageRequest(message=file))
        with pytest.raises(TaskNotFoundError, match="eve's task ids are"):
            await client.get_task(GetTaskRequest(id="not-a-task"))
        with pytest.raises(TaskNotFoundError, match="has no turn_9"):
            await client.get_task(GetTaskRequest(id=f"{context}:turn_9"))
        with pytest.raises(InvalidParamsError, match="needs a contextId"):
            await client.list_tasks(ListTasksRequest())
        with pytest.raises(PushNotificationNotSupportedError, match="no push notifications"):
            config = TaskPushNotificationConfig(task_id=f"{context}:turn_0", url="http://x")
            await client.create_task_push_notification_config(config)
    raw = server.http
    assert raw is not None
    headers = {"authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
    unparsable = raw.post(PATH, content=b"{", headers=headers)
    assert unparsable.json()["error"]["code"] == -32700
    # an A2A 0.3 client (no A2A-Version header) is told which version this server speaks
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
    old = raw.post(PATH, json=body, headers={"authorization": f"Bearer {TOKEN}"})
    assert old.json()["error"]["code"] == -32009
    assert session_count(server) == sessions
    assert len(server.events(context)) == events


async def test_an_answer_that_is_no_option_is_refused_and_the_task_still_waits(
    server: InProcessServer,
) -> None:
    async with a2a_client(server, streaming=False) as client:
        context = task_of(await read(client, text("hi"))).context_id
        parked = task_of(await read(client, text("ship it", context_id=context)))
        with pytest.raises(InvalidParamsError, match="'maybe' answers no option"):
            await read(client, text("maybe", task_id=parked.id))
        still = await client.get_task(GetTaskRequest(id=parked.id))
    assert still.status.state == INPUT_REQUIRED


async def test_a_request_without_the_token_is_refused(server: InProcessServer) -> None:
    before = session_count(server)
    async with a2a_client(server, token=None) as client:
        with pytest.raises(A2AClientError, match="401"):
            await read(client, text("hi"))
        async with a2a_client(server, token="wrong") as wrong:
            with pytest.raises(A2AClientError, match="401"):
                await read(wrong, text("hi"))
    raw = server.http
    assert raw is not None
    refused = raw.post(PATH, json={"jsonrpc": "2.0", "id": 1, "method": "GetTask"})
    assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer")
    assert TOKEN not in refused.text
    assert session_count(server) == before


async def test_the_docs_example_asks_the_agent(server: InProcessServer) -> None:
    page = (REPO_ROOT / "docs/channels/a2a.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.S)
    [example] = [block for block in blocks if "async def ask" in block]
    namespace: dict[str, Any] = {}
    exec(compile(example, "docs/channels/a2a.md", "exec"), namespace)
    headers = {"authorization": f"Bearer {TOKEN}"}
    transport = server.async_transport()
    async with httpx.AsyncClient(transport=transport, headers=headers, timeout=30) as http:
        assert await namespace["ask"](http, ROOT + PATH, "hello") == "hello from eve"


async def test_the_latency_probe_reads_a_whole_streamed_task(server: InProcessServer) -> None:
    headers = {"authorization": f"Bearer {TOKEN}"}
    transport = server.async_transport()
    async with httpx.AsyncClient(
        transport=transport, base_url=ROOT, headers=headers, timeout=30
    ) as http:
        measured = await a2a_probe.probe(http, PATH)
    # the task, working, each word of the answer, its last chunk, completed
    assert len(measured.gaps) >= 4
