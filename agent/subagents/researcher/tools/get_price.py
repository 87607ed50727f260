"""The researcher's own get_price: same name as the root tool, another implementation."""

from typing import Annotated

from pydantic import Field

from agent.lib.catalog import CURRENCY, price_of
from eve.tools import tool

LAST_YEAR_FACTOR = 0.9


@tool
def get_price(
    item: Annotated[str, Field(examples=["hammer"])], months_ago: int = 12
) -> dict[str, object]:
    """Get an item's price as it was some months ago."""
    price = price_of(item)
    if price is None:
        raise ValueError(f"'{item}' is not in the catalog")
    factor = 1 - (1 - LAST_YEAR_FACTOR) * months_ago / 12
    return {
        "item": item,
        "price": round(price * factor, 2),
        "currency": CURRENCY,
        "months_ago": months_ago,
    }
