"""The built-in ``run_python`` tool: run a Python program in the sandbox, as ``bash`` runs a
command (``python3 -c CODE`` with the workspace as working directory)."""

from __future__ import annotations

from typing import Any

import pydantic

from eve.authoring.context import ToolContext
from eve.builtins._command import CommandInput, run_in_sandbox
from eve.builtins._limits import OUTPUT_MAX_BYTES
from eve.tools import define_tool
from eve.tools.approval import always

#: the program travels as one argument, which Linux caps at 128 KiB (MAX_ARG_STRLEN)
CODE_MAX_CHARS = 100_000


class RunPythonInput(CommandInput):
    code: str = pydantic.Field(
        min_length=1,
        max_length=CODE_MAX_CHARS,
        description="The program, run with `python3 -c` in the workspace.",
    )


async def run_python(data: RunPythonInput, ctx: ToolContext) -> dict[str, Any]:
    return await run_in_sandbox(["python3", "-c", data.code], data.timeout_seconds, ctx)


default = define_tool(
    description=f"""
        Run a Python 3 program (the system's python3, its standard library and what is
        installed there) with the workspace as working directory; stdin is empty. Print
        what you want to see. Returns exit_code, stdout and stderr (each cut at
        {OUTPUT_MAX_BYTES // 1024} KiB with a note), status ("exited", "timed_out",
        "cancelled") and, when a sandbox limit stopped it, a note. Needs approval for every
        call.
    """,
    input_schema=RunPythonInput,
    execute=run_python,
    approval=always(),
    # like bash, it may change the workspace the step's other calls read: it runs alone
    parallel=False,
)
