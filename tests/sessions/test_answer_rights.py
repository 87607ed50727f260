"""Who may answer what a turn asks, who did (``input.resolved``'s responder), and who the
turn's tools, hooks and subagents are told sent its message (``ctx.principal``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import AppFactory
from tests.oidc.provider import Provider
from tests.sessions.apps import call, say
from tests.sessions.harness import Driver, Event, count
from tests.sessions.principals import ALICE, BOB, CAROL, As, verifying
from tests.sessions.test_tasks import app

#: ``pay`` asks before every call; a holder of the role ``finance`` may answer too
PAY = """
    from pathlib import Path
    from eve.tools import ToolContext, tool
    from eve.tools.approval import always

    @tool(approval=always(by="role:finance"))
    def pay(amount: int, ctx: ToolContext) -> str:
        '''Pay an amount.'''
        with Path("paid.log").open("a") as log:
            log.write(f"{ctx.principal.kind}:{ctx.principal.id} {amount}\\n")
        return "paid"
"""

#: a hook that notes whose message each turn answers
WHO = """
    from pathlib import Path
    from eve.context import current_principal
    from eve.hooks import define_hook

    def on_turn_started(event):
        with Path("turns.log").open("a") as log:
            log.write(current_principal().id + "\\n")

    default = define_hook(events={"turn.started": on_turn_started})
"""

HELPER = {
    "agent/subagents/helper/agent.py": """
        from eve import define_agent
        default = define_agent(description="Helps.")
    """,
    "agent/subagents/helper/instructions.md": "Help.\n",
    "agent/subagents/helper/tools/whoami.py": """
        from pathlib import Path
        from eve.tools import ToolContext, tool

        @tool
        def whoami(ctx: ToolContext) -> str:
            '''Note who asks.'''
            Path("helper.log").write_text(ctx.principal.id)
            return ctx.principal.id
    """,
}


def pay_app(make_app: AppFactory) -> Path:
    return app(
        make_app,
        {"agent/tools/pay.py": PAY, "agent/hooks/who.py": WHO, **HELPER},
        {
            "__root__": [
                *[step for n in (1, 2, 3) for step in (call("pay", amount=n), say("done"))],
                call("helper", message="who asks?"),
                say("done"),
            ],
            "helper": [call("whoami"), say("it is you")],
        },
    )


def parked_request(driver: Driver, session: str, n: int) -> dict[str, Any]:
    events = driver.wait_for(session, count("turn.waiting", n))
    requested = [e for e in events if e["type"] == "input.requested"]
    request: dict[str, Any] = requested[n - 1]["data"]["requests"][0]
    return request


def answer(driver: Driver, session: str, request: dict[str, Any]) -> tuple[int, str]:
    body = {"inputResponses": [{"requestId": request["request_id"], "optionId": "approve"}]}
    response = driver.post(f"/session/{session}", body)
    return response.status_code, response.json().get("code", response.json().get("status"))


def responders(events: list[Event]) -> list[dict[str, str]]:
    return [e["data"]["responder"] for e in events if e["type"] == "input.resolved"]


def test_the_sender_an_operator_or_the_named_role_answers_and_the_answer_names_them(
    make_app: AppFactory,
) -> None:
    root = pay_app(make_app)
    provider = Provider()
    server = verifying(root, provider).start()
    alice, bob, carol = (As(server, provider, who) for who in (ALICE, BOB, CAROL))
    try:
        session = alice.create("pay 1")
        asked = parked_request(alice, session, 1)
        assert asked["by"] == "role:finance"
        # bob may not see alice's session: to him it does not exist
        assert answer(bob, session, asked) == (409, "session_not_active")
        assert answer(alice, session, asked) == (202, "resolved")
        alice.wait_for(session, count("session.waiting", 1))

        # the operator's message in alice's session: not alice's to answer; finance's is
        assert server.send(session, "pay 2").status_code == 202
        asked = parked_request(alice, session, 2)
        refused = alice.post(
            f"/session/{session}",
            {"inputResponses": [{"requestId": asked["request_id"], "optionId": "approve"}]},
        )
        assert (refused.status_code, refused.json()["code"]) == (403, "answer_not_allowed")
        assert "role:finance" in refused.json()["error"]
        assert answer(carol, session, asked) == (202, "resolved")
        # carol may answer what names her role, and see nothing of the session
        assert carol.get(f"/session/{session}").status_code == 404
        alice.wait_for(session, count("session.waiting", 2))

        assert alice.send(session, "pay 3").status_code == 202
        asked = parked_request(alice, session, 3)
        assert answer(server, session, asked) == (202, "resolved")
        alice.wait_for(session, count("session.waiting", 3))

        assert alice.send(session, "ask the helper").status_code == 202
        events = alice.wait_for(session, count("session.waiting", 4))
    finally:
        server.stop()
    assert responders(events) == [
        {"id": ALICE.id, "kind": "user"},
        {"id": CAROL.id, "kind": "user"},
        {"id": "operator", "kind": "operator"},
    ]
    # ctx.principal is who sent the turn's message, whoever approved the call
    paid = (root / "paid.log").read_text().splitlines()
    assert paid == [f"user:{ALICE.id} 1", "operator:operator 2", f"user:{ALICE.id} 3"]
    turns = (root / "turns.log").read_text().splitlines()
    assert turns == [ALICE.id, "operator", ALICE.id, ALICE.id]
    # a subagent's turn answers the same message: its tools see the same principal
    assert (root / "helper.log").read_text() == ALICE.id
