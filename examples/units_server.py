"""A small MCP server the example agent connects to (agent/connections/units.py): unit
conversions, written with the MCP SDK's server API and spoken to over stdio."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer(name="units")

#: how many of the base unit (metre, kilogram) one of each unit is
FACTORS = {
    "mm": 0.001,
    "cm": 0.01,
    "m": 1.0,
    "km": 1000.0,
    "in": 0.0254,
    "ft": 0.3048,
    "g": 0.001,
    "kg": 1.0,
    "lb": 0.45359237,
    "oz": 0.028349523125,
}
LENGTHS = {"mm", "cm", "m", "km", "in", "ft"}


@server.tool()
def convert_units(value: float, from_unit: str, to_unit: str) -> str:
    """Convert a length (mm, cm, m, km, in, ft) or a weight (g, kg, lb, oz) to another unit."""
    if from_unit not in FACTORS or to_unit not in FACTORS:
        raise ToolError(f"unknown unit; known: {', '.join(FACTORS)}")
    if (from_unit in LENGTHS) != (to_unit in LENGTHS):
        raise ToolError(f"cannot convert {from_unit} to {to_unit}: one is a length, one a weight")
    converted = value * FACTORS[from_unit] / FACTORS[to_unit]
    return f"{value:g} {from_unit} = {converted:.4g} {to_unit}"


if __name__ == "__main__":
    server.run()
