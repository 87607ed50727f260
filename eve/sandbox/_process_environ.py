"""What a command may see of eve's environment: an allow-list for it, and nothing in /proc.

A child of eve runs as the same user, so it may read ``/proc/<eve's pid>/environ``. That
file is not ``os.environ``: the kernel shows the environment block the process was started
with, which sits in the process's own memory and which neither ``os.environ`` nor
``setenv`` rewrite. ``hide_secrets_from_proc`` overwrites the secret values in that block
itself, after moving each one to a fresh copy with ``setenv`` so that C code calling
``getenv`` (libpq reading ``PGPASSWORD``, say) still finds it. ``os.environ`` is Python's
own copy and keeps every value. Linux only: elsewhere the block is left as it is.
"""

from __future__ import annotations

import ctypes
import os
import re
import threading
from pathlib import Path

from eve._proc_stat import stat_fields
from eve._redact import SECRET_ENV_VARS

#: what a command's environment is made of; HOME is the workspace, TMPDIR added if set
PASSED_THROUGH = ("PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "TMPDIR")
#: names whose values eve treats as secrets in its own environment block
_SECRET_NAME = re.compile(
    r"^(EVE_.*|.*(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|DATABASE_URL|DSN).*)$",
    re.IGNORECASE,
)

_lock = threading.Lock()
_hidden = False


def command_environment(workspace: Path) -> dict[str, str]:
    """The whole environment of a bash command: the allow-list, HOME set to the workspace.

    An allow-list, not a deny-list: a variable eve has never heard of (a cloud token, a
    database URL named in agent.py) stays out too.
    """
    env = {name: os.environ[name] for name in PASSED_THROUGH if name in os.environ}
    env.setdefault("PATH", os.defpath)
    env["HOME"] = str(workspace)
    return env


def is_secret_name(name: str) -> bool:
    return name in SECRET_ENV_VARS or bool(_SECRET_NAME.match(name))


def hide_secrets_from_proc() -> None:
    """Blank the secret values in this process's initial environment block (once).

    Idempotent and cheap after the first call; does nothing where /proc is missing.
    """
    global _hidden
    with _lock:
        if _hidden:
            return
        _hidden = True
        block = _initial_block()
        if block is None:
            return
        start, data = block
        libc = ctypes.CDLL(None, use_errno=True)
        offset = 0
        for entry in data.split(b"\0"):
            name, equals, value = entry.partition(b"=")
            if equals and value and is_secret_name(name.decode(errors="replace")):
                # a fresh copy first, so getenv never sees the value half overwritten
                libc.setenv(name, value, 1)
                ctypes.memset(start + offset + len(name) + 1, ord("*"), len(value))
            offset += len(entry) + 1


def _initial_block() -> tuple[int, bytes] | None:
    """Where the kernel's ``environ`` file reads from (``env_start``/``env_end`` in
    /proc/self/stat, fields 50 and 51, proc(5)) and what is there now."""
    try:
        fields = stat_fields("self")
    except OSError:
        return None
    if len(fields) < 49:
        return None
    start, end = int(fields[47]), int(fields[48])
    if not 0 < start < end:
        return None
    return start, ctypes.string_at(start, end - start)
