"""Convert an amount between currencies (define_tool form with a pydantic input model)."""

from typing import Literal

from pydantic import BaseModel, Field

from eve.tools import ToolContext, define_tool

RATES = {"EUR": 1.0, "USD": 1.08, "GBP": 0.86}


class ConvertInput(BaseModel):
    amount: float = Field(gt=0, description="The amount to convert", examples=[12.5])
    source: Literal["EUR", "USD", "GBP"] = "EUR"
    target: Literal["EUR", "USD", "GBP"] = Field(examples=["USD"])


async def convert(data: ConvertInput, ctx: ToolContext) -> dict[str, object]:
    value = data.amount / RATES[data.source] * RATES[data.target]
    return {"amount": round(value, 2), "currency": data.target}


default = define_tool(
    description="Convert an amount of money from one currency to another.",
    input_schema=ConvertInput,
    execute=convert,
)
