"""The trivial tool both eve benchmarks time around, and the instant model's answers.

``Tally`` counts runs, so a configuration that skips steps is caught, not timed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

FINAL_TEXT = "done"


@dataclass
class Tally:
    calls: int = 0

    def add(self, a: int, b: int) -> int:
        self.calls += 1
        return a + b


def add_tool(tally: Tally) -> Any:
    """A resolved ``add(a, b)`` tool, on the path of a compiled agent's tool, without files."""
    from eve.compiler.normalize import tool_entry
    from eve.runtime.resolve_tool import bind_tool
    from eve.tools import tool

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return tally.add(a, b)

    entry = tool_entry(
        add,
        name="add",
        logical_path="agent/tools/add.py",
        source_id="tools/add.py",
        export_name="default",
        factory=False,
    )
    return bind_tool(entry, add)


def add_or_finish(step: int, calls: int) -> list[Any]:
    """The instant model's answer at ``step``: one ``add`` call, or the final text after
    ``calls`` of them."""
    from eve.models.events import Done, TextDelta, ToolCallEnd, ToolCallStart

    if step >= calls:
        return [TextDelta(text=FINAL_TEXT), Done(stop_reason="end_turn")]
    call_id = f"call_{step}"
    return [
        ToolCallStart(id=call_id, name="add"),
        ToolCallEnd(id=call_id, name="add", input={"a": step, "b": 1}),
        Done(stop_reason="tool_use"),
    ]
