"""Binding a setup's memory slots to a store: their tools, and the recall each turn starts
with.

A resolved agent declares its slots (``ResolvedAgent.memory``) but holds no store: where
entries live is the edge's to say (the session database ``eve serve`` opened, the app's
under ``eve run``). ``with_memory`` adds each node's memory tools (through the catalog when
its slots ask) and ``AgentSetup.memory``, which the loop asks for the prompt's memory
section at the start of a turn (``RecalledMemory``, recorded so a replayed turn sees the
section its first run did).
"""

from __future__ import annotations

from dataclasses import replace

import msgspec

from eve.auth.principal import Principal
from eve.execution.environment import TurnEnvironment
from eve.execution.recording import RecordKind
from eve.execution.setup import AgentSetup
from eve.memory.access import MemoryHost, NodeMemory, Turn
from eve.runtime.automatic import with_catalog_tools
from eve.runtime.memory import MEMORY_TOOLS, memory_tools
from eve.runtime.resolved import ResolvedAgent

#: the record a turn's recall is (``StepRecorder.record``)
RECALL_STEP = "memory.recall"


class RecalledMemory(msgspec.Struct, frozen=True, kw_only=True):
    """The memory section of a turn's system prompt (empty: nothing to add)."""

    text: str = ""


RECALLED: RecordKind[RecalledMemory] = RecordKind(RecalledMemory, "a memory recall")


def _bound(agent: ResolvedAgent, memory: NodeMemory) -> ResolvedAgent:
    kept = [t for t in agent.tools if t.name not in MEMORY_TOOLS]
    skills = [s.entry for s in agent.skills]
    servers = [c.name for c in agent.connections if c.entry.expose == "catalog"]
    # the memory tools are the node's own: the catalog's declaration counts them
    own = [*kept, *memory_tools(memory)]
    return replace(agent, tools=with_catalog_tools(own, skills, [], servers))


def _with(setup: AgentSetup, host: MemoryHost) -> AgentSetup:
    agent = setup.agent
    if not agent.memory:
        return setup
    memory = NodeMemory(host, agent.node_id, agent.memory)
    return replace(setup, agent=_bound(agent, memory), memory=memory)


def with_memory(setup: AgentSetup, host: MemoryHost) -> AgentSetup:
    """``setup`` and its subagents' with their memory slots bound to ``host``'s stores
    (``setup`` itself when no node has slots)."""
    if not setup.agent.memory and not any(s.agent.memory for s in setup.subagents.values()):
        return setup
    subagents: dict[str, AgentSetup] = {}
    for node_id, sub in setup.subagents.items():
        subagents[node_id] = replace(_with(sub, host), subagents=subagents)
    return replace(_with(setup, host), subagents=subagents)


async def with_recall(
    setup: AgentSetup, env: TurnEnvironment, principal: Principal, message: str
) -> AgentSetup:
    """``setup`` with what its memory slots recall of ``message`` in the system prompt, for
    one turn (a recorded value: a replayed turn gets the section its first run got)."""
    memory = setup.memory
    if memory is None or not any(slot.recall for slot in memory.slots.values()):
        return setup
    turn = Turn(session_id=env.session_id, principal=principal, turn_id=env.turn_id)

    async def produce() -> RecalledMemory:
        return RecalledMemory(text=await memory.recall(message, turn))

    recalled = await env.recorder.record(RECALL_STEP, produce, RECALLED)
    if not recalled.text:
        return setup
    agent = setup.agent
    system = f"{agent.instructions.rstrip()}\n\n{recalled.text}\n"
    return replace(setup, agent=replace(agent, instructions=system))
