"""An agent's connection to ``asking_server.py`` (a server that asks the client), as a file."""

from __future__ import annotations

from pathlib import Path

from tests import forked

#: the repository's root, on the server's path: it runs as ``tests.connections.asking_server``
REPO = Path(__file__).parents[2]


def asking_connection(counted: Path, options: str = "", *, name: str = "asking") -> str:
    """The source of ``agent/connections/<name>.py``; the server appends each call it starts
    to ``counted``; ``options`` are more keywords of ``define_mcp_connection``.

    The server is forked from the test process's fork server (``forked.stdio_server_command``):
    started anew, its imports (the MCP SDK) were 0.8 s of CPU a start."""
    command, env = forked.stdio_server_command("tests.connections.asking_server", path=REPO)
    command.append(str(counted))
    return (
        "from eve.connections import define_mcp_connection\n\n"
        f"default = define_mcp_connection(\n    description='Asks the client.',\n"
        f"    command={command!r},\n    env={env!r},\n    expose='tools',\n    {options}\n)\n"
    )
