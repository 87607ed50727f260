"""Small agent apps for the session tests: tool sources and scripted model responses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import AppFactory
from tests.sessions.harness import script

SCRIPTED_AGENT = """
    from eve import define_agent
    default = define_agent(model="offline/script:script.json", limits={limits})
"""

TOOLS = {
    "ship": """
        from pathlib import Path
        from eve.tools import tool
        from eve.tools.approval import always

        @tool(approval=always())
        def ship(item: str) -> str:
            '''Ship an item (a person approves every call).'''
            with Path("shipped.log").open("a") as log:
                log.write(item + "\\n")
            return f"shipped {item}"
    """,
    "slowly": """
        import asyncio
        from pathlib import Path
        from eve.tools import ToolContext, tool

        @tool
        async def slowly(seconds: float, ctx: ToolContext) -> str:
            '''Wait, unless the turn is cancelled.'''
            Path(f"slowly-{ctx.session_id}.started").write_text("yes")
            try:
                await asyncio.wait_for(ctx.signal.wait(), seconds)
                return "stopped early"
            except TimeoutError:
                return "waited"
    """,
    "hold": """
        import asyncio
        from pathlib import Path
        from eve.tools import ToolContext, tool

        # alone: the calls of its step run one after another, in one durable record, so
        # a kill while it holds re-runs the whole step (tests/memory/test_memory_crash.py)
        @tool(parallel=False)
        async def hold(ctx: ToolContext) -> str:
            '''Wait until the test writes the file "release".'''
            Path(f"hold-{ctx.session_id}.started").write_text("yes")
            while not Path("release").exists():
                await asyncio.sleep(0.05)
            return "released"
    """,
    "leak": """
        from eve.context import define_state
        from eve.tools import tool

        shared = {"count": 0}
        mine = define_state("mine", 0)

        @tool
        def leak() -> dict[str, int]:
            '''Count calls two ways.'''
            shared["count"] += 1
            return {"module_global": shared["count"], "session_state": mine.update(lambda n: n + 1)}
    """,
    "secret": """
        import os
        from eve.tools import tool

        @tool
        def secret() -> str:
            '''Return something that must never be stored.'''
            return "the token is " + os.environ["EVE_API_TOKEN"]
    """,
}


def scripted_app(
    make_app: AppFactory,
    responses: list[dict[str, Any]],
    tools: tuple[str, ...] = (),
    limits: dict[str, Any] | None = None,
    *,
    new_database: bool = False,
) -> Path:
    files = {
        "agent/agent.py": SCRIPTED_AGENT.replace("{limits}", repr(limits or {"max_turns": 5})),
        "agent/instructions.md": "Follow the script.\n",
        **{f"agent/tools/{name}.py": TOOLS[name] for name in tools},
    }
    root = make_app(files, minimal=False, new_database=new_database)
    script(root, responses)
    return root


def call(name: str, **data: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "input": data}]}


def say(text: str) -> dict[str, Any]:
    return {"text": text}
