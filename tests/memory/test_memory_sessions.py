"""Memory through durable sessions and the HTTP routes, with real tokens: two principals
save through the tool in their own sessions, each searches and sees only their own entry
(secrets redacted before storing), each inspects only theirs, one cannot forget the
other's, and each can erase what the agent remembers about them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.oidc.provider import Provider
from tests.sessions.apps import call, say
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer
from tests.sessions.principals import ALICE, BOB, As, scripted_root, verifying

SECRET = "sk-ant-api03-" + "Q" * 24
MEMORY = """
    from eve.memory import define_memory
    default = define_memory(scope="principal", description="what the user tells you")
"""
SCRIPT = [
    call("eve__memory_save", text=f"likes green tea; api key {SECRET}", metadata={"k": SECRET}),
    say("noted"),
    call("eve__memory_search", query="which tea"),
    say("found"),
]


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, oidc_provider: Provider
) -> Iterator[InProcessServer]:
    root = scripted_root(tmp_path_factory, SCRIPT, {"agent/memory.py": MEMORY})
    running = verifying(root, oidc_provider).start()
    try:
        yield running
    finally:
        running.stop()


def _results(events: list[dict[str, object]], name: str) -> list[object]:
    return [
        e["data"]["output"]  # type: ignore[index]
        for e in events
        if e["type"] == "action.result" and e["data"]["name"] == name  # type: ignore[index]
    ]


def _remember_and_search(caller: As) -> tuple[str, list[dict[str, object]]]:
    session = caller.create("remember this")
    caller.wait_for(session, count("session.waiting", 1))
    caller.send(session, "what do you know?")
    events = caller.wait_for(session, count("session.waiting", 2))
    [saved] = _results(events, "eve__memory_save")
    [searched] = _results(events, "eve__memory_search")
    return str(saved), [searched]  # type: ignore[list-item]


def test_two_principals_remember_apart_and_each_erases_their_own(
    server: InProcessServer, oidc_provider: Provider
) -> None:
    alice, bob = As(server, oidc_provider, ALICE), As(server, oidc_provider, BOB)
    alice_saved, alice_found = _remember_and_search(alice)
    _, bob_found = _remember_and_search(bob)
    assert SECRET not in alice_saved and "[redacted]" in alice_saved
    mine = alice.get("/memory").json()["memories"]
    [entry] = mine
    assert entry["text"] == "likes green tea; api key [redacted]"
    assert entry["metadata"] == {"k": "[redacted]"}
    assert entry["principal"] == {"id": ALICE.id, "kind": "user"}
    # each search found one entry: its own principal's
    assert entry["id"] in str(alice_found) and entry["id"] not in str(bob_found)
    [theirs] = bob.get("/memory").json()["memories"]
    assert theirs["id"] != entry["id"] and theirs["id"] in str(bob_found)
    assert len(server.get("/memory").json()["memories"]) == 2  # the operator sees both
    refused = bob.request("DELETE", f"/memory/{entry['id']}")
    assert refused.status_code == 404 and refused.json()["code"] == "memory_not_found"
    assert server.request("DELETE", "/memory").status_code == 400  # an operator names a slot
    assert alice.request("DELETE", "/memory").json()["erased"] == 1
    assert alice.get("/memory").json()["memories"] == []
    assert [m["id"] for m in server.get("/memory").json()["memories"]] == [theirs["id"]]
    assert bob.request("DELETE", f"/memory/{theirs['id']}").status_code == 200
    assert server.get("/memory?slot=memory").json()["memories"] == []
    unknown = server.get("/memory?slot=nope")
    assert unknown.status_code == 404 and unknown.json()["code"] == "memory_slot_unknown"
    # nowhere on disk: not in the memory table, the event log or the engine's step records
    stored = [p for p in (server.app_root / ".eve" / "sessions").rglob("*") if p.is_file()]
    assert stored and not [p for p in stored if SECRET.encode() in p.read_bytes()]
