"""Compile-time loading: import an authored module and find its one definition.

The export rule: a module exposes its definition as ``default``, or as its single public
module-level definition. A callable under ``default`` is a factory; the compiler calls it to
read the definition's shape and the runtime calls it again at resolve time.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eve.authoring.agent import AgentDefinition
from eve.authoring.auth import AuthDefinition
from eve.authoring.channels import ChannelDefinition
from eve.authoring.connections import MCPConnection
from eve.authoring.hooks import HookDefinition
from eve.authoring.instructions import InstructionsDefinition
from eve.authoring.schedules import ScheduleDefinition
from eve.authoring.tools import ToolDefinition

DEFINITION_TYPES: tuple[type, ...] = (
    AgentDefinition,
    ToolDefinition,
    HookDefinition,
    MCPConnection,
    ChannelDefinition,
    AuthDefinition,
    ScheduleDefinition,
    InstructionsDefinition,
)
_KIND_NAMES = {
    AgentDefinition: "an agent definition",
    ToolDefinition: "a tool definition",
    HookDefinition: "a hook definition (define_hook(events=...))",
    MCPConnection: "an MCP connection (define_mcp_connection(...))",
    ChannelDefinition: "a channel (ai_sdk(...), a2a(...), define_channel(...) …)",
    AuthDefinition: "a custom auth hook (define_auth(authenticate))",
    ScheduleDefinition: "a schedule (define_schedule(cron=..., run=...))",
    InstructionsDefinition: "dynamic instructions (@define_instructions over a function of ctx)",
}


class LoadFailure(Exception):
    """Why a module could not give its definition; becomes one diagnostic."""

    def __init__(self, code: str, message: str, *, line: int | None = None, path: str = ""):
        super().__init__(message)
        self.code = code
        self.message = message
        self.line = line
        self.path = path


@dataclass(frozen=True, kw_only=True)
class LoadedDefinition:
    value: Any
    export_name: str
    factory: bool


def run_sync(awaitable: Any) -> Any:
    """Await a factory's result from sync code, even when an event loop is already running
    (``eve dev`` recompiles between turns inside its loop)."""

    async def wrap() -> Any:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wrap())
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(wrap())
        except BaseException as error:
            box["error"] = error

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _authored_frame(error: BaseException, app_root: Path) -> tuple[str, int] | None:
    """The innermost traceback frame inside the app's agent/ tree: where the author looks."""
    agent_dir = (app_root / "agent").resolve()
    found: tuple[str, int] | None = None
    for frame in traceback.extract_tb(error.__traceback__):
        path = Path(frame.filename).resolve()
        if path.is_relative_to(agent_dir) and frame.lineno is not None:
            found = (path.relative_to(app_root.resolve()).as_posix(), frame.lineno)
    if isinstance(error, SyntaxError) and error.filename and error.lineno:
        path = Path(error.filename).resolve()
        if path.is_relative_to(agent_dir):
            found = (path.relative_to(app_root.resolve()).as_posix(), error.lineno)
    return found


def import_authored(module_id: str, path: str, app_root: Path) -> Any:
    try:
        return importlib.import_module(module_id)
    except BaseException as error:
        if isinstance(error, KeyboardInterrupt):
            raise
        where = _authored_frame(error, app_root)
        location = f" at {where[0]}:{where[1]}" if where else ""
        detail = "".join(traceback.format_exception_only(type(error), error)).strip()
        raise LoadFailure(
            "compile/import-failed",
            f"importing {path} failed{location}: {detail}",
            line=where[1] if where and where[0] == path else None,
            path=where[0] if where else path,
        ) from error


def _describe(value: Any) -> str:
    for kind, name in _KIND_NAMES.items():
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _check_kind(value: Any, expected: type, path: str, how: str) -> None:
    if isinstance(value, expected):
        return
    code = (
        "compile/wrong-definition-kind"
        if isinstance(value, DEFINITION_TYPES)
        else ("compile/export-invalid")
    )
    raise LoadFailure(
        code,
        f"{path}: {how} is {_describe(value)}, but this file must define {_KIND_NAMES[expected]}",
        path=path,
    )


def find_definition(module: Any, expected: type, path: str) -> LoadedDefinition:
    """Apply the export rule to an imported module."""
    if hasattr(module, "default"):
        value = module.default
        if callable(value) and not isinstance(value, DEFINITION_TYPES):
            try:
                produced = value()
                if inspect.isawaitable(produced):
                    produced = run_sync(produced)
            except Exception as error:
                raise LoadFailure(
                    "compile/factory-failed",
                    f"{path}: the factory under `default` raised {type(error).__name__}: {error}",
                    path=path,
                ) from error
            _check_kind(produced, expected, path, "what the `default` factory returned")
            return LoadedDefinition(value=produced, export_name="default", factory=True)
        _check_kind(value, expected, path, "`default`")
        return LoadedDefinition(value=value, export_name="default", factory=False)
    found = [
        (name, value)
        for name, value in vars(module).items()
        if isinstance(value, DEFINITION_TYPES) and not name.startswith("_")
    ]
    # A definition imported from elsewhere is not this module's own unless it is all it has.
    own = [(n, v) for n, v in found if getattr(v, "defined_in", None) == module.__name__]
    candidates = own or found
    if not candidates:
        raise LoadFailure(
            "compile/export-missing",
            f"{path} defines nothing: it must define {_KIND_NAMES[expected]}, at module level "
            "or as `default`",
            path=path,
        )
    if len(candidates) > 1:
        names = ", ".join(name for name, _ in candidates)
        raise LoadFailure(
            "compile/export-ambiguous",
            f"{path} has several definitions ({names}); keep one per file or mark the one "
            "to use as `default = ...`",
            path=path,
        )
    name, value = candidates[0]
    _check_kind(value, expected, path, f"`{name}`")
    return LoadedDefinition(value=value, export_name=name, factory=False)
