"""Confirm a delivery slot with the customer: a workflow tool that asks a person.

In a durable session (`eve dev`, `eve serve`) the question parks the tool in its own
workflow: no process waits, a restart loses nothing, and the answer arrives over the
session API (`POST /eve/v1/sessions/{id}/input`).
"""

from pydantic import BaseModel, Field

from eve.tools import WorkflowContext, define_workflow_tool


class Slot(BaseModel):
    slot: str = Field(description="When the order would arrive", examples=["Friday morning"])


async def confirm(data: Slot, ctx: WorkflowContext) -> dict[str, object]:
    await ctx.progress({"asking": data.slot})
    answer = await ctx.ask(f"Can the order arrive {data.slot}?", options=["yes", "no"])
    return {"slot": data.slot, "confirmed": answer == "yes"}


default = define_workflow_tool(
    description="Ask the customer whether a delivery slot suits them; returns their answer.",
    input_schema=Slot,
    run=confirm,
    available_in_subagents=False,
)
