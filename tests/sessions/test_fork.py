"""Forking a session (``eve.sessions.forking``): the copy in the store on SQLite and
PostgreSQL, and through the HTTP route and both clients, with a real sandboxed workspace."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import sqlalchemy as sa

from eve.auth.principal import OPERATOR
from eve.client import AsyncEveClient, EveClient
from eve.errors import EveError, SessionBusy, SessionNotFound
from eve.messages import assistant_message, user_message
from eve.sandbox.bindings import session_directory
from eve.sessions.accepted import accept
from eve.sessions.checkpoint import SessionCheckpoint, decode_checkpoint, encode_checkpoint
from eve.sessions.forking import fork_session
from eve.sessions.store import EventRow, SessionStore
from eve.sessions.tables import sessions, workspace_heads
from eve.sessions.turn_workflow import turn_workflow_id
from tests.conftest import AppFactory, wait_for_file
from tests.sandbox.conftest import require_bubblewrap
from tests.sessions.apps import call, say, scripted_app
from tests.sessions.harness import count, script
from tests.sessions.inprocess import InProcessServer
from tests.sessions.principals import ALICE, BOB, on_service

# --- the copy, in the store --------------------------------------------------------------

SOURCE = SessionCheckpoint(
    messages=[user_message("hello"), assistant_message("hi there")],
    state={"visits": 1},
    approved_once=["ship"],
    turns=1,
)


@pytest.fixture
def store(either_store: SessionStore) -> SessionStore:
    """A session ``src`` of alice's, one turn in, whose workspace head is the tree ``t1``."""
    either_store.create_session("src", owner=ALICE)
    either_store.save_checkpoint("src", encode_checkpoint(SOURCE))
    either_store.run(
        lambda c: c.execute(workspace_heads.insert().values(session_id="src", tree_id="t1"))
    )
    return either_store


def heads(store: SessionStore) -> dict[str, str]:
    return dict(store.run(lambda c: c.execute(sa.select(workspace_heads)).all()))  # type: ignore[arg-type]


def session_count(store: SessionStore) -> int:
    return int(
        store.run(lambda c: c.execute(sa.select(sa.func.count()).select_from(sessions)).scalar())
    )


def test_a_fork_copies_history_state_and_workspace_and_leaves_the_source(
    store: SessionStore,
) -> None:
    forked = fork_session(store, "src", fork_id="fork", principal=ALICE, key="k1")
    assert (forked.session_id, forked.forked_from, forked.replayed) == ("fork", "src", False)
    assert decode_checkpoint(store.load_checkpoint("fork")) == SOURCE
    assert decode_checkpoint(store.load_checkpoint("src")) == SOURCE
    assert heads(store) == {"src": "t1", "fork": "t1"}
    row = store.get_session("fork")
    assert row is not None and (row.owner.id, row.status, row.forked_from) == (
        ALICE.id,
        "active",
        "src",
    )
    [started] = [json.loads(e) for e in store.read_events("fork", 0)]
    assert started["type"] == "session.started" and started["meta"]["index"] == 0
    assert started["data"] == {"session_id": "fork", "forked_from": "src"}
    assert store.read_events("src", 0) == []
    # the same key again: the first fork, nothing made twice
    again = fork_session(store, "src", fork_id="other", principal=ALICE, key="k1")
    assert (again.session_id, again.replayed) == ("fork", True)
    assert session_count(store) == 2


def test_only_who_may_see_the_source_forks_it(store: SessionStore) -> None:
    for who, source in [(BOB, "src"), (ALICE, "ses_unknown")]:
        with pytest.raises(SessionNotFound, match=f"no session {source}"):
            fork_session(store, source, fork_id="fork", principal=who)
    assert session_count(store) == 1
    by_operator = fork_session(store, "src", fork_id="fork", principal=OPERATOR)
    row = store.get_session(by_operator.session_id)
    assert row is not None and row.owner.kind == "operator"


def test_a_fork_waits_for_the_sources_turn_to_end(store: SessionStore) -> None:
    workflow = turn_workflow_id("src", 0)

    def queued(c: sa.Connection, turn: int) -> None:
        accept(c, session_id="src", turn=turn, kind="turn", workflow_id=workflow)

    store.claim_turn("src", queued)
    with pytest.raises(SessionBusy, match="session src has turn_0 running") as busy:
        fork_session(store, "src", fork_id="fork")
    assert (busy.value.place, busy.value.http_status) == ("turn_0", 409)
    # the turn's last event is in the log: it ended, though its place is not marked done
    end = {"type": "session.waiting", "data": {"session_id": "src", "turn_id": "turn_0"}}
    row = EventRow(
        workflow_id=workflow, body_seq=4, step_key=None, attempt=None, payload=json.dumps(end)
    )
    store.append_events("src", 0, [row])
    assert fork_session(store, "src", fork_id="fork").session_id == "fork"
    # a compaction logs before it saves: only its place marked done lets a fork through
    store.claim_turn(
        "src",
        lambda c, turn: accept(
            c, session_id="src", turn=turn, kind="compact", workflow_id="src:compact-1"
        ),
    )
    with pytest.raises(SessionBusy) as busy:
        fork_session(store, "src", fork_id="fork2")
    assert busy.value.place == "compaction"


# --- through the server ------------------------------------------------------------------

COUNT = """
    from eve.context import define_state
    from eve.tools import tool

    visits = define_state("visits", 0)

    @tool
    def visit() -> int:
        '''Count a visit of this session.'''
        return visits.update(lambda n: n + 1)
"""
#: reads the workspace from inside the sandbox (the built-in bash would ask for approval)
PEEK = """
    from eve.tools import ToolContext, tool

    @tool
    async def peek(path: str, ctx: ToolContext) -> str:
        '''Show a workspace file, as a sandboxed command reads it.'''
        return (await ctx.sandbox.run(["cat", path], timeout=10)).stdout
"""


Event = dict[str, Any]


def outputs(events: list[Event]) -> dict[str, str]:
    """Each tool's (last) result in ``events``, by tool name."""
    return {e["data"]["name"]: e["data"]["output"] for e in events if e["type"] == "action.result"}


def replies(events: list[Event]) -> list[str]:
    return [e["data"]["message"] for e in events if e["type"] == "message.completed"]


def after_first_turn(events: list[Event]) -> list[Event]:
    ends = [i for i, e in enumerate(events) if e["type"] == "session.waiting"]
    return events[ends[0] + 1 :]


def write_and_visit(content: str) -> dict[str, Any]:
    """One reply with two calls: write ``notes.txt``, count a visit."""
    write = {"name": "write_file", "input": {"path": "notes.txt", "content": content}}
    return {"tool_calls": [write, {"name": "visit", "input": {}}]}


def test_a_fork_goes_on_from_the_sources_history_state_and_files(make_app: AppFactory) -> None:
    require_bubblewrap()
    root = make_app(
        {
            "agent/agent.py": """
                from eve import define_agent
                default = define_agent(
                    model="offline/script:script.json",
                    builtin_tools=["write_file"],
                    limits={"max_turns": 8},
                )
            """,
            "agent/instructions.md": "Follow the script.\n",
            "agent/sandbox.py": """
                from eve.sandbox import define_sandbox
                default = define_sandbox()
            """,
            "agent/tools/visit.py": COUNT,
            "agent/tools/peek.py": PEEK,
        },
        minimal=False,
    )
    # the script answers by how many replies the history holds: the fork's first turn
    # gets the third answer only if the source's two came with it
    script(
        root,
        [
            write_and_visit("the source's"),
            say("one"),
            call("peek", path="notes.txt"),
            write_and_visit("turn two's"),
            say("two"),
            say("the fork's turn reached the source"),
        ],
    )
    server = InProcessServer(root).start()
    try:
        source = server.create("start")
        server.wait_for(source, count("session.waiting"))
        answer = server.post(f"/session/{source}/fork")
        assert answer.status_code == 201, answer.text
        body = answer.json()
        fork = body["sessionId"]
        assert body == {"ok": True, "sessionId": fork, "status": "forked", "forkedFrom": source}
        assert answer.headers["x-eve-session-id"] == fork != source
        assert server.send(fork, "go on").status_code == 202
        in_fork = server.wait_for(fork, count("session.waiting"))
        workspace = root / "workspace"
        assert (session_directory(workspace, source) / "notes.txt").read_text() == "the source's"
        assert server.send(source, "go on").status_code == 202
        in_source = server.wait_for(source, count("session.waiting", 2))
        summary = server.get(f"/session/{fork}").json()
    finally:
        server.stop()
    assert in_fork[0]["data"] == {"session_id": fork, "forked_from": source}
    # the fork saw the source's file in its sandbox and counted on from the source's state
    seen = outputs(in_fork)
    assert replies(in_fork) == ["two"] and "the source's" in seen["peek"] and seen["visit"] == "2"
    # the source's next turn saw neither the fork's messages, nor its state, nor its file
    later = after_first_turn(in_source)
    seen = outputs(later)
    assert replies(later) == ["two"] and "the source's" in seen["peek"] and seen["visit"] == "2"
    assert (session_directory(workspace, fork) / "notes.txt").read_text() == "turn two's"
    assert (summary["forkedFrom"], summary["turns"]) == (source, 2)


HELD = [call("hold"), say("held"), say("the fork's own")]


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_a_busy_source_is_refused_and_the_route_and_clients_fork(
    make_app: AppFactory, database: str, request: pytest.FixtureRequest
) -> None:
    # on PostgreSQL the app has no SQLite files (tests/session_files.py), nor makes any
    root = scripted_app(make_app, HELD, tools=("hold",), new_database=database == "postgresql")
    env = (
        {}
        if database == "sqlite"
        else {"EVE_DATABASE_URL": request.getfixturevalue("postgres_url")}
    )
    server = InProcessServer(root, env=env).start()
    try:
        source = on_service(server, lambda s: s.create("hold on", principal=ALICE)).session_id
        wait_for_file(root / f"hold-{source}.started")
        busy = server.post(f"/session/{source}/fork")
        assert (busy.status_code, busy.json()["code"]) == (409, "session_busy"), busy.text
        (root / "release").write_text("go")
        server.wait_for(source, count("session.waiting"))
        # at once: the turn's end is in the log, whether or not its place is marked done
        mine = on_service(server, lambda s: s.fork(source, principal=ALICE))
        assert (mine.status, mine.forked_from) == ("forked", source)
        refusals = [refused(server, sid, BOB) for sid in (source, "ses_unknown")]
        assert refusals[0] == refusals[1] == ("SessionNotFound", 404)
        assert server.post("/session/ses_unknown/fork").status_code == 404
        # the same key, twice: one fork
        key = {"Idempotency-Key": "fork-once", **server.headers()}
        first, second = (server.post(f"/session/{source}/fork", headers=key) for _ in "ab")
        assert first.json()["sessionId"] == second.json()["sessionId"]
        assert second.headers["idempotent-replayed"] == "true"
        with EveClient(server.url, transport=server.transport()) as client:
            by_client = client.fork(source)
            assert client.session(by_client.session_id).forked_from == source
        by_async = asyncio.run(fork_async(server, source))
        assert (by_async.status, by_async.forked_from) == ("forked", source)
        assert server.send(mine.session_id, "and now?").status_code == 202
        events = server.wait_for(mine.session_id, count("session.waiting"))
        owner = server.get(f"/session/{mine.session_id}").json()["owner"]
    finally:
        server.stop()
    assert replies(events) == ["the fork's own"]
    assert owner == {"id": ALICE.id, "kind": "user"}
    # the sessions were where the parameter says
    assert (root / ".eve" / "sessions" / "eve.sqlite").exists() == (database == "sqlite")


def refused(server: InProcessServer, session_id: str, who: object) -> tuple[str, int]:
    try:
        on_service(server, lambda s: s.fork(session_id, principal=who))  # type: ignore[arg-type]
    except EveError as error:
        return type(error).__name__, error.http_status
    raise AssertionError("forked")


async def fork_async(server: InProcessServer, source: str) -> object:
    async with AsyncEveClient(server.url, transport=server.async_transport()) as client:
        return await client.fork(source)
