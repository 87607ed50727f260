"""The units server that ships beside the example (examples/units_server.py), over stdio."""

from eve.connections import define_mcp_connection

default = define_mcp_connection(
    description="Unit conversions for product dimensions and weights.",
    # "python" is the interpreter running eve, so the server has the same packages
    command=["python", "examples/units_server.py"],
    call_timeout_seconds=10,
)
