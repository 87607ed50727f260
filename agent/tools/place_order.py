"""Place an order: it spends money, so a person approves every call, and only the shop
assistant itself may (no subagent it delegates to sees this tool)."""

from eve.context import define_state
from eve.tools import tool
from eve.tools.approval import always

orders = define_state("orders", [])


@tool(approval=always(), available_in_subagents=False)
def place_order(item: str, quantity: int = 1) -> dict[str, object]:
    """Order an item from the catalog for the customer (asks a person first)."""
    placed = orders.update(lambda items: [*items, {"item": item, "quantity": quantity}])
    return {"order_number": len(placed), "item": item, "quantity": quantity}
