"""An MCP server's form at eve dev's prompt: a line per field, asked again until it fits."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.cli.test_dev_cli import piped
from tests.conftest import AppFactory

SERVER = Path(__file__).with_name("asking_server.py")


def test_dev_fills_in_a_servers_form_field_by_field(make_app: AppFactory) -> None:
    command = [sys.executable, str(SERVER)]
    root = make_app(
        {
            "agent/agent.py": "from eve import define_agent\n"
            "default = define_agent(model='offline/script:script.json')\n",
            "agent/instructions.md": "Follow the script.\n",
            "agent/connections/hotel.py": "from eve.connections import define_mcp_connection\n"
            f"default = define_mcp_connection(description='Books.', command={command!r}, "
            "expose='tools')\n",
        },
        minimal=False,
    )
    script = [{"tool_calls": [{"name": "hotel__book", "input": {}}]}, {"text": "all set"}]
    (root / "script.json").write_text(json.dumps(script))
    out, err = piped(root, "book\nmaybe\naccept\nAda\ntwo\n2\ntriple\ndouble\n/exit\n")
    asked = out.index("hotel asks: Who is staying, and how long? [accept/decline/cancel] ")
    assert out.index("Name (string): ", asked) < out.index("Nights (integer): ", asked)
    assert "answer one of: accept, decline, cancel" in err
    assert "not an integer: 'two'" in err and "answer one of: single, double" in err
    assert "booked double for Ada, 2 nights" in out + err, err
    assert "all set" in out
