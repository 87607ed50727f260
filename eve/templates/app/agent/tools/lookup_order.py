"""Look an order up by its number: one tool per file, the file name is the tool's name."""

from typing import Annotated

from pydantic import Field

from eve.tools import tool

#: stands in for your order system: replace it with a call to your own API or database
ORDERS = {
    "A-1001": {"status": "shipped", "carrier": "DHL", "eta": "2 days"},
    "A-1002": {"status": "being packed", "carrier": None, "eta": "4 days"},
}


@tool
def lookup_order(
    order_id: Annotated[str, Field(description="The order number", examples=["A-1001"])],
) -> dict[str, object]:
    """Find an order's status, carrier and expected delivery."""
    order = ORDERS.get(order_id.strip().upper())
    if order is None:
        raise ValueError(f"no order {order_id!r}: ask the customer to check the number")
    return {"order_id": order_id, **order}
