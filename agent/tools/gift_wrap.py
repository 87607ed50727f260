"""Gift-wrap an order: rarely needed, so it is deferred and reached through the catalog."""

from typing import Literal

from eve.tools import tool


@tool(deferred=True)
def gift_wrap(
    order_number: int, paper: Literal["kraft", "red", "blue"] = "kraft", card: str = ""
) -> dict[str, object]:
    """Gift-wrap a placed order in kraft, red or blue paper, with an optional card message.

    Wrapping costs 2.50 EUR per order.
    """
    return {"order_number": order_number, "paper": paper, "card": card, "price": 2.5}
