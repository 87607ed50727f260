"""A subagent with a typed answer: it sorts a customer's request into a ``Triage``."""

from typing import Literal

import pydantic

from eve import define_agent


class Triage(pydantic.BaseModel):
    """What a customer's request is about: the caller reads these fields, not prose."""

    kind: Literal["price", "order", "return", "other"]
    #: the item the request names, if any
    item: str | None = None
    urgent: bool = False


default = define_agent(
    description="Sorts a customer's request: its kind (price, order, return, other), the "
    "item it names and whether it is urgent. Answers with a Triage object.",
    model="anthropic/claude-haiku-4-5",
    limits={"max_turns": 3},
    output_schema=Triage,
)
