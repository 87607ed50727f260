"""What a bash command can learn of eve's secrets (issue 12, finding 8).

The command runs as eve's user, so it could read ``/proc/<eve's pid>/environ`` — the
environment eve was *started* with, keys and database password included — and every
variable was passed down to it. The "eve" here is a Python process started with the
secrets in its initial environment, as ``eve serve`` is, which runs the bash tool.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SECRETS = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-INITIALBLOCK-0123456789",
    "EVE_DATABASE_URL": "postgresql://eve:pa55-INITIALBLOCK-word@db.internal/eve",
    "EVE_API_TOKEN": "tok-INITIALBLOCK-abcdefghijklmnopqrstuvwxyz",
    "PGPASSWORD": "pg-INITIALBLOCK-hunter22",
}

# Reads the environment of eve, of the command's parent and of every ancestor up to init.
COMMAND = r"""
env
cat /proc/{eve}/environ | tr '\0' '\n'
cat /proc/$PPID/environ | tr '\0' '\n'
p=$$
while [ "$p" -gt 1 ]; do
  cat /proc/$p/environ 2>/dev/null | tr '\0' '\n'
  p=$(sed 's/.*) //' /proc/$p/stat | cut -d' ' -f2)
done
"""

EVE = """
import asyncio, ctypes, json, os, sys
from pathlib import Path
from eve.authoring.context import ToolContext
from eve.builtins import bash

async def main():
    ctx = ToolContext(session_id="s", call_id="c", tool_name="bash", workspace=Path.cwd())
    command = sys.argv[1].replace("{eve}", str(os.getpid()))
    data = bash.default.input_model.model_validate({"command": command})
    result = await bash.default.execute(data, ctx)
    libc = ctypes.CDLL(None)
    libc.getenv.restype = ctypes.c_char_p
    print(json.dumps({
        "result": result,
        # eve itself still has every value: Python's copy, and C's getenv (libpq)
        "os_environ": {k: os.environ.get(k) for k in NAMES},
        "getenv": {k: (libc.getenv(k.encode()) or b"").decode() for k in NAMES},
    }))

asyncio.run(main())
""".replace("NAMES", repr(list(SECRETS)))


def test_no_secret_reaches_the_command_through_env_or_proc(tmp_path: Path) -> None:
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        **SECRETS,
    }
    done = subprocess.run(
        [sys.executable, "-c", EVE, COMMAND],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    report = json.loads(done.stdout)
    output = report["result"]["stdout"] + report["result"]["stderr"]
    assert "PATH=" in output  # the command really read environments
    assert "INITIALBLOCK" not in output
    assert report["os_environ"] == SECRETS
    assert report["getenv"] == SECRETS
