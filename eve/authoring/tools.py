"""Tool definitions: ``define_tool``, the ``@tool`` decorator, provider and workflow tools."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, get_origin, get_type_hints, overload

import pydantic
from pydantic.fields import FieldInfo

from eve.authoring._caller import caller_module
from eve.authoring.approval import NEVER, ApprovalPolicy, ApprovalRule, normalize_approval
from eve.authoring.context import ToolContext
from eve.authoring.docstrings import read_docstring
from eve.errors import AuthoringError

InputSchema = type[pydantic.BaseModel] | dict[str, Any]
Execute = Callable[[Any, ToolContext], Any]


@dataclass(frozen=True, kw_only=True)
class ProviderSpec:
    provider: str
    type: str
    config: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class ToolDefinition:
    """A tool as authored; one of ``FunctionTool``, ``WorkflowTool`` or ``ProviderTool``. The
    file name under ``tools/`` is its name."""

    description: str
    available_in_subagents: bool = True
    #: the module whose code made this definition; a module that merely imports one does
    #: not count it as its own (see the export rule)
    defined_in: str | None = None


@dataclass(frozen=True, kw_only=True)
class _LocalDefinition(ToolDefinition):
    """A tool eve runs: it has an input schema, an approval rule, and may be deferred.

    The body receives the validated input: an instance of ``input_model`` when the schema is
    a pydantic model, otherwise a dict checked against ``input_json_schema``.
    """

    input_model: type[pydantic.BaseModel] | None = None
    input_json_schema: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = None
    #: ``output_schema`` came from a pydantic model (so it needs no meta-schema check)
    output_schema_generated: bool = False
    approval: ApprovalRule = NEVER
    deferred: bool = False

    def json_schema(self) -> dict[str, Any]:
        """The input schema as the model sees it."""
        if self.input_model is not None:
            return self.input_model.model_json_schema()
        return self.input_json_schema or {"type": "object", "properties": {}}


@dataclass(frozen=True, kw_only=True)
class FunctionTool(_LocalDefinition):
    """``execute(input, ctx)`` runs in the step that calls it: sync, async or an async
    generator (each yield a partial snapshot, the last one the result)."""

    execute: Execute
    to_model_output: Callable[[Any], Any] | None = None
    ends_turn: bool = False
    #: characters of its result the model reads (over the agent's limit); None: the agent's
    max_output_chars: int | None = None
    #: its calls may run beside the other calls of their step; False: one at a time
    parallel: bool = True
    #: the decorated function's name and first line (``@tool``): the compiler warns when
    #: the name is not the tool's, which is its file's
    function_name: str | None = None
    function_line: int | None = None


@dataclass(frozen=True, kw_only=True)
class WorkflowTool(_LocalDefinition):
    """``run(input, ctx)`` runs as a task with a ``WorkflowContext``."""

    run: Execute


@dataclass(frozen=True, kw_only=True)
class ProviderTool(ToolDefinition):
    """A tool the model provider runs: declared, never executed here."""

    provider: ProviderSpec


AnyToolDefinition = FunctionTool | WorkflowTool | ProviderTool


def _split_schema(
    schema: InputSchema | None,
) -> tuple[type[pydantic.BaseModel] | None, dict[str, Any] | None]:
    if schema is None:
        return None, {"type": "object", "properties": {}}
    if isinstance(schema, type) and issubclass(schema, pydantic.BaseModel):
        return schema, None
    if isinstance(schema, dict):
        if schema.get("type", "object") != "object":
            raise AuthoringError('input_schema must describe an object ("type": "object")')
        return None, schema
    raise AuthoringError(
        "input_schema takes a pydantic model class or a JSON Schema dict, "
        f"not {type(schema).__name__}"
    )


def _is_model(schema: object) -> bool:
    return isinstance(schema, type) and issubclass(schema, pydantic.BaseModel)


def _output_schema(schema: InputSchema | None) -> dict[str, Any] | None:
    if schema is None or isinstance(schema, dict):
        return schema
    if isinstance(schema, type) and issubclass(schema, pydantic.BaseModel):
        return schema.model_json_schema()
    raise AuthoringError("output_schema takes a pydantic model class or a JSON Schema dict")


def _output_cap(chars: int | None) -> int | None:
    if chars is not None and (isinstance(chars, bool) or not isinstance(chars, int) or chars < 1):
        raise AuthoringError(f"max_output_chars takes a number of characters from 1, not {chars!r}")
    return chars


def _require_description(description: str | None, where: str) -> str:
    text = inspect.cleandoc(description or "")
    if not text:
        raise AuthoringError(f"{where} needs a description: the model reads it to choose tools")
    return text


def define_tool(
    *,
    description: str,
    execute: Execute,
    input_schema: InputSchema | None = None,
    output_schema: InputSchema | None = None,
    approval: ApprovalRule | ApprovalPolicy | None = None,
    to_model_output: Callable[[Any], Any] | None = None,
    deferred: bool = False,
    available_in_subagents: bool = True,
    ends_turn: bool = False,
    max_output_chars: int | None = None,
    parallel: bool = True,
) -> FunctionTool:
    """Define a tool whose ``execute(input, ctx)`` runs in this process.

    ``execute`` may be sync, async or an async generator (each yield is a partial snapshot,
    the last one the result). ``max_output_chars`` caps the characters of its result the
    model reads, over the agent's ``limits.max_tool_output_chars``. ``parallel=False``: its
    calls never run beside the other calls of their step (a tool with shared side effects).
    """
    if not callable(execute):
        raise AuthoringError("define_tool(execute=...) must be a function")
    return FunctionTool(
        **_local_fields(input_schema, output_schema, approval),
        defined_in=caller_module(),
        description=_require_description(description, "define_tool"),
        execute=execute,
        to_model_output=to_model_output,
        deferred=deferred,
        available_in_subagents=available_in_subagents,
        ends_turn=ends_turn,
        max_output_chars=_output_cap(max_output_chars),
        parallel=parallel,
    )


def define_workflow_tool(
    *,
    description: str,
    run: Execute,
    input_schema: InputSchema | None = None,
    output_schema: InputSchema | None = None,
    approval: ApprovalRule | ApprovalPolicy | None = None,
    deferred: bool = False,
    available_in_subagents: bool = True,
) -> WorkflowTool:
    """Define a tool whose body runs as a task: ``async def run(input, ctx)`` with a
    ``WorkflowContext`` (``sleep``, ``wait_for_event``, ``ask``, ``progress``, ``step``).

    In a durable session the body is a child workflow whose waits hold no compute; its
    return value is the tool's result. It has no plain ``execute``.
    """
    if not inspect.iscoroutinefunction(run):
        raise AuthoringError(
            "define_workflow_tool(run=...) must be an async function: run(input, ctx)"
        )
    return WorkflowTool(
        **_local_fields(input_schema, output_schema, approval),
        defined_in=caller_module(),
        description=_require_description(description, "define_workflow_tool"),
        run=run,
        deferred=deferred,
        available_in_subagents=available_in_subagents,
    )


def _local_fields(
    input_schema: InputSchema | None,
    output_schema: InputSchema | None,
    approval: ApprovalRule | ApprovalPolicy | None,
) -> dict[str, Any]:
    """The schema and approval fields every local tool definition normalizes alike."""
    model, schema = _split_schema(input_schema)
    return {
        "input_model": model,
        "input_json_schema": schema,
        "output_schema": _output_schema(output_schema),
        "output_schema_generated": _is_model(output_schema),
        "approval": normalize_approval(approval),
    }


def provider_tool(
    *,
    provider: str,
    type: str,
    description: str,
    config: dict[str, Any] | None = None,
    available_in_subagents: bool = True,
) -> ProviderTool:
    """Declare a tool the model provider executes (web search and the like).

    It has no local execute: its module is read at compile time and never imported at run time.
    """
    if not provider or not type:
        raise AuthoringError("provider_tool needs provider= and type= (e.g. 'anthropic')")
    return ProviderTool(
        description=_require_description(description, "provider_tool"),
        provider=ProviderSpec(provider=provider, type=type, config=dict(config or {})),
        available_in_subagents=available_in_subagents,
        defined_in=caller_module(),
    )


# --- the decorator form --------------------------------------------------------------------


def _context_parameter(fn: Callable[..., Any], hints: dict[str, Any]) -> str | None:
    for name in inspect.signature(fn).parameters:
        hint = hints.get(name)
        # ``ToolContext[Deps]`` (typed deps) is the context too, not an input field
        if hint is ToolContext or get_origin(hint) is ToolContext:
            return name
    return None


def _described(hint: Any, description: str | None) -> Any:
    """``hint`` with ``description`` for its schema field, unless a ``Field`` gives one."""
    if not description:
        return hint
    for meta in getattr(hint, "__metadata__", ()):
        if isinstance(meta, FieldInfo) and meta.description:
            return hint  # what the author wrote in the signature wins over the docstring
    return Annotated[hint, pydantic.Field(description=description)]


def _signature_model(
    fn: Callable[..., Any], skip: str | None, documented: Mapping[str, str] | None = None
) -> type[pydantic.BaseModel]:
    hints = get_type_hints(fn, include_extras=True)
    documented = documented or {}
    fields: dict[str, Any] = {}
    for name, param in inspect.signature(fn).parameters.items():
        if name == skip:
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise AuthoringError(f"@tool {fn.__name__}: *args and **kwargs cannot be schema fields")
        if name not in hints:
            raise AuthoringError(f"@tool {fn.__name__}: parameter '{name}' needs a type annotation")
        default = ... if param.default is param.empty else param.default
        fields[name] = (_described(hints[name], documented.get(name)), default)
    title = "".join(part.capitalize() for part in fn.__name__.split("_")) + "Input"
    model: type[pydantic.BaseModel] = pydantic.create_model(
        title, __config__=pydantic.ConfigDict(extra="forbid"), **fields
    )
    return model


def _keyword_execute(fn: Callable[..., Any], ctx_name: str | None) -> Execute:
    """Adapt ``fn(**fields[, ctx])`` to ``execute(input, ctx)``, keeping sync/async/generator."""

    def arguments(data: pydantic.BaseModel, ctx: ToolContext) -> dict[str, Any]:
        kwargs = {name: getattr(data, name) for name in type(data).model_fields}
        if ctx_name is not None:
            kwargs[ctx_name] = ctx
        return kwargs

    if inspect.isasyncgenfunction(fn):

        async def generator(data: Any, ctx: ToolContext) -> Any:
            async for item in fn(**arguments(data, ctx)):
                yield item

        return generator
    if inspect.iscoroutinefunction(fn):

        async def coroutine(data: Any, ctx: ToolContext) -> Any:
            return await fn(**arguments(data, ctx))

        return coroutine

    def plain(data: Any, ctx: ToolContext) -> Any:
        return fn(**arguments(data, ctx))

    return plain


@overload
def tool(fn: Callable[..., Any], /) -> FunctionTool: ...
@overload
def tool(
    *,
    description: str | None = None,
    approval: ApprovalRule | ApprovalPolicy | None = None,
    output_schema: InputSchema | None = None,
    to_model_output: Callable[[Any], Any] | None = None,
    deferred: bool = False,
    available_in_subagents: bool = True,
    ends_turn: bool = False,
    max_output_chars: int | None = None,
    parallel: bool = True,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    description: str | None = None,
    approval: ApprovalRule | ApprovalPolicy | None = None,
    output_schema: InputSchema | None = None,
    to_model_output: Callable[[Any], Any] | None = None,
    deferred: bool = False,
    available_in_subagents: bool = True,
    ends_turn: bool = False,
    max_output_chars: int | None = None,
    parallel: bool = True,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Make a typed function a tool: its signature is the schema, its docstring the description.

    A parameter annotated ``ToolContext`` receives the call context and is not in the schema.
    A Google, NumPy or Sphinx (reST) parameter section of the docstring describes the
    parameters in the schema (``Field(description=...)`` in the signature wins), and is left
    out of the tool's description.
    """

    def build(function: Callable[..., Any]) -> FunctionTool:
        hints = get_type_hints(function, include_extras=True)
        ctx_name = _context_parameter(function, hints)
        doc = read_docstring(function.__doc__)
        return FunctionTool(
            description=_require_description(
                description or doc.description, f"@tool {function.__name__}"
            ),
            input_model=_signature_model(function, ctx_name, doc.parameters),
            execute=_keyword_execute(function, ctx_name),
            output_schema=_output_schema(output_schema),
            output_schema_generated=_is_model(output_schema),
            approval=normalize_approval(approval),
            to_model_output=to_model_output,
            deferred=deferred,
            available_in_subagents=available_in_subagents,
            ends_turn=ends_turn,
            max_output_chars=_output_cap(max_output_chars),
            parallel=parallel,
            defined_in=function.__module__,
            function_name=function.__name__,
            function_line=function.__code__.co_firstlineno,
        )

    return build if fn is None else build(fn)
