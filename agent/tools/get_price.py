"""Look up an item's current price (decorator form: the signature is the schema)."""

from typing import Annotated

from pydantic import Field

from agent.lib.catalog import CURRENCY, price_of
from eve.tools import tool


@tool
def get_price(item: Annotated[str, Field(examples=["hammer"])]) -> dict[str, object]:
    """Get the current price of an item in the shop's catalog."""
    price = price_of(item)
    if price is None:
        raise ValueError(f"'{item}' is not in the catalog")
    return {"item": item, "price": price, "currency": CURRENCY}
