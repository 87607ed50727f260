"""The built-in ``bash`` tool: run a shell command in the sandbox, bounded in time and output.

The command runs through the session's sandbox (``ctx.sandbox``, ``eve.sandbox``): under
``bubblewrap`` in namespaces of its own with the session's workspace as the only writable
place, no network unless allowed, and rlimits; under ``local`` (or with no ``sandbox.py``)
as eve runs, under a reaper that kills whatever it started and with an allow-listed
environment, but otherwise unconfined. Either way every call needs a person's approval
(docs/security.md says what each provider still lets a command reach).
"""

from __future__ import annotations

from typing import Any

import pydantic

from eve.authoring.context import ToolContext
from eve.builtins._command import CommandInput, run_in_sandbox
from eve.builtins._limits import OUTPUT_MAX_BYTES
from eve.tools import define_tool
from eve.tools.approval import always


class BashInput(CommandInput):
    command: str = pydantic.Field(min_length=1, description="Run with `bash -c` in the workspace.")


async def bash(data: BashInput, ctx: ToolContext) -> dict[str, Any]:
    return await run_in_sandbox(["bash", "-c", data.command], data.timeout_seconds, ctx)


default = define_tool(
    description=f"""
        Run a bash command with the workspace as working directory; stdin is empty.
        Returns exit_code, stdout and stderr (each cut at {OUTPUT_MAX_BYTES // 1024} KiB
        with a note) and status: "exited", "timed_out" or "cancelled" — the last two mean
        the command and everything it started were killed (a negative exit_code: minus the
        signal); a "note" says when a sandbox limit (CPU time, file size) stopped a
        process. Background processes (even ones started with setsid) are killed when the
        command exits. The environment holds PATH, locale and TERM only; HOME is the
        workspace. Needs approval for every call.
    """,
    input_schema=BashInput,
    execute=bash,
    approval=always(),
    # it changes the workspace the step's other calls read: it runs alone, in its turn
    parallel=False,
)
