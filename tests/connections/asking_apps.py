"""An agent's connection to ``asking_server.py`` (a server that asks the client), as a file."""

from __future__ import annotations

import sys
from pathlib import Path

SERVER = Path(__file__).with_name("asking_server.py")


def asking_connection(counted: Path, options: str = "", *, name: str = "asking") -> str:
    """The source of ``agent/connections/<name>.py``; the server appends each call it starts
    to ``counted``; ``options`` are more keywords of ``define_mcp_connection``."""
    command = [sys.executable, str(SERVER), str(counted)]
    return (
        "from eve.connections import define_mcp_connection\n\n"
        f"default = define_mcp_connection(\n    description='Asks the client.',\n"
        f"    command={command!r},\n    expose='tools',\n    {options}\n)\n"
    )
