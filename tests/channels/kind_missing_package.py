"""A channel kind whose protocol package is not installed: importing it fails as importing
a kind fails when its extra was not installed (here the ``mcp`` extra's package)."""

raise ModuleNotFoundError("No module named 'mcp'", name="mcp")
