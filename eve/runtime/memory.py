"""A node's memory tools: declared from its manifest slots, bound to a ``NodeMemory``.

Four tools serve every slot of a node (``eve__memory_save``, ``…_search``, ``…_update``,
``…_forget``), with a ``memory`` argument naming the slot when the node has several. Like
the automatic built-ins they are not in the manifest: the slots are, so ``eve info`` and
the binding derive the same declarations from a node. They are offered in every request,
or found through the catalog when every slot says ``expose="catalog"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from eve._step_attempts import running_step
from eve.authoring.context import ToolContext
from eve.authoring.tools import Execute
from eve.manifest import FunctionToolEntry, MemoryEntry
from eve.memory.access import MAX_TEXT_CHARS, NodeMemory, Turn
from eve.memory.records import MemoryRecord
from eve.runtime.resolved import ResolvedFunctionTool
from eve.runtime.validation import JsonSchemaValidator

SAVE_TOOL = "eve__memory_save"
SEARCH_TOOL = "eve__memory_search"
UPDATE_TOOL = "eve__memory_update"
FORGET_TOOL = "eve__memory_forget"
MEMORY_TOOLS = (SAVE_TOOL, SEARCH_TOOL, UPDATE_TOOL, FORGET_TOOL)
MAX_SEARCH_RESULTS = 20
_SCOPES = {
    "session": "this conversation only",
    "principal": "the person you are talking to, across their conversations",
    "agent": "everyone who talks to this agent",
}


def _slot_property(slots: Sequence[MemoryEntry]) -> dict[str, Any]:
    return {
        "type": "string",
        "enum": [s.name for s in slots],
        "description": "the memory slot: " + "; ".join(_about(s) for s in slots),
    }


def _about(slot: MemoryEntry) -> str:
    what = f" ({slot.description})" if slot.description else ""
    return f"'{slot.name}'{what}, kept for {_SCOPES[slot.scope]}"


def _schema(
    slots: Sequence[MemoryEntry], properties: dict[str, Any], required: list[str]
) -> dict[str, Any]:
    if len(slots) > 1:
        properties = {"memory": _slot_property(slots), **properties}
        required = ["memory", *required]
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


_TEXT = {"type": "string", "minLength": 1, "maxLength": MAX_TEXT_CHARS}
_METADATA = {"type": "object", "description": 'labels for the entry (e.g. {"topic": "diet"})'}
_ID = {"type": "string", "description": "the entry's id, as search returns it"}


def memory_entries(slots: Sequence[MemoryEntry]) -> list[FunctionToolEntry]:
    """The memory tools of a node with ``slots``, declared (none without slots)."""
    if not slots:
        return []
    where = "; ".join(_about(s) for s in slots)
    deferred = all(s.expose == "catalog" for s in slots)
    specs: list[tuple[str, str, dict[str, Any], list[str]]] = [
        (
            SAVE_TOOL,
            f"Remember a fact for later conversations: {where}. Save one self-contained "
            "fact per call, written so it makes sense on its own.",
            {"text": _TEXT, "metadata": _METADATA},
            ["text"],
        ),
        (
            SEARCH_TOOL,
            f"Search what you remember: {where}. Returns the best matches with their ids.",
            {
                "query": {"type": "string", "minLength": 1},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_RESULTS},
            },
            ["query"],
        ),
        (
            UPDATE_TOOL,
            "Correct a remembered entry (by its id, from a search): new text, new metadata "
            "or both.",
            {"id": _ID, "text": _TEXT, "metadata": _METADATA},
            ["id"],
        ),
        (
            FORGET_TOOL,
            "Forget a remembered entry (by its id, from a search), e.g. when the person asks "
            "you to or it is no longer true.",
            {"id": _ID},
            ["id"],
        ),
    ]
    return [
        FunctionToolEntry(
            name=name,
            description=description,
            logical_path="",
            source_id=f"eve:memory/{name}",
            input_schema=_schema(slots, properties, required),
            deferred=deferred,
        )
        for name, description, properties, required in specs
    ]


def _turn(ctx: ToolContext) -> Turn:
    step = running_step.get()
    return Turn(
        session_id=ctx.session_id,
        principal=ctx.principal,
        turn_id=ctx.turn_id,
        call_id=ctx.call_id,
        step=step.step if step is not None else "",
    )


def _shown(record: MemoryRecord) -> dict[str, Any]:
    updated = datetime.fromtimestamp(record.updated_at, UTC).isoformat(timespec="seconds")
    return {"id": record.id, "text": record.text, "metadata": record.metadata, "updated": updated}


def _executes(memory: NodeMemory) -> dict[str, Execute]:
    async def save(data: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        saved = await memory.save(
            data.get("memory"), data["text"], data.get("metadata") or {}, _turn(ctx)
        )
        return {"saved": _shown(saved)}

    async def search(data: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        limit = int(data.get("limit") or 5)
        hits = await memory.search(data.get("memory"), data["query"], limit, _turn(ctx))
        return {"results": [{**_shown(h.record), "score": round(h.score, 4)} for h in hits]}

    async def update(data: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        changed = await memory.update(
            data.get("memory"), data["id"], data.get("text"), data.get("metadata"), _turn(ctx)
        )
        return {"updated": _shown(changed)}

    async def forget(data: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        await memory.forget(data.get("memory"), data["id"], _turn(ctx))
        return {"forgotten": data["id"]}

    return {SAVE_TOOL: save, SEARCH_TOOL: search, UPDATE_TOOL: update, FORGET_TOOL: forget}


def memory_tools(memory: NodeMemory) -> list[ResolvedFunctionTool]:
    """The node's memory tools, live: each call works in the scope of its turn."""
    executes = _executes(memory)
    return [
        ResolvedFunctionTool(
            entry=entry,
            execute=executes[entry.name],
            validator=JsonSchemaValidator(entry.input_schema),
        )
        for entry in memory_entries(list(memory.slots.values()))
    ]
