"""Normalize live definitions into manifest entries (pure: definitions in, Structs out)."""

from __future__ import annotations

from typing import Any, TypedDict, assert_never

import jsonschema
import msgspec

from eve._model_windows import window_for
from eve.authoring.agent import AgentConfigModel
from eve.authoring.hooks import HookDefinition
from eve.authoring.tools import FunctionTool, ProviderTool, ToolDefinition, WorkflowTool
from eve.compiler.cache import CompileCache
from eve.compiler.load import LoadFailure
from eve.manifest import (
    AgentConfig,
    Approval,
    Compaction,
    ContextWindow,
    Deps,
    FunctionToolEntry,
    HookEntry,
    Limits,
    ModelPrice,
    ModelSettings,
    Output,
    PromptCache,
    ProviderToolEntry,
    ProviderToolSpec,
    Retries,
    SchemaSource,
    ToolEntry,
    WorkflowToolEntry,
)


def json_ready(
    schema: dict[str, Any] | None, what: str, path: str, *, generated: bool
) -> dict[str, Any] | None:
    """The schema as plain JSON data; hand-written schemas are checked against the JSON Schema
    meta-schema (pydantic's are valid by construction, and checking costs more than making)."""
    if schema is None:
        return None
    try:
        plain: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(schema))
        if not generated:
            jsonschema.validators.validator_for(plain).check_schema(plain)
    except (TypeError, msgspec.EncodeError) as error:
        raise LoadFailure(
            "compile/schema-invalid", f"{path}: {what} is not JSON: {error}", path=path
        ) from error
    except jsonschema.SchemaError as error:
        raise LoadFailure(
            "compile/schema-invalid",
            f"{path}: {what} is not a valid JSON Schema: {error.message}",
            path=path,
        ) from error
    return plain


def tool_entry(
    definition: ToolDefinition,
    *,
    name: str,
    logical_path: str,
    source_id: str,
    export_name: str,
    factory: bool,
    cache: CompileCache | None = None,
) -> ToolEntry:
    """The manifest entry for one tool definition, of the definition's kind."""
    where = _ToolFields(
        name=name,
        description=definition.description,
        logical_path=logical_path,
        source_id=source_id,
        export_name=export_name,
        factory=factory,
        available_in_subagents=definition.available_in_subagents,
    )
    if not isinstance(definition, FunctionTool | WorkflowTool | ProviderTool):
        # a subclass of ToolDefinition of the author's own is no kind the runtime can run
        raise LoadFailure(
            "compile/export-invalid",
            f"{logical_path}: {type(definition).__name__} is not a kind of tool eve knows",
            path=logical_path,
        )
    match definition:
        case ProviderTool(provider=spec):
            config = ProviderToolSpec(provider=spec.provider, type=spec.type, config=spec.config)
            return ProviderToolEntry(**where, provider=config)
        case FunctionTool():
            return FunctionToolEntry(
                **where,
                **_local_fields(definition, logical_path, cache),
                has_model_output_projection=definition.to_model_output is not None,
                ends_turn=definition.ends_turn,
                max_output_chars=definition.max_output_chars,
                parallel=definition.parallel,
            )
        case WorkflowTool():
            return WorkflowToolEntry(**where, **_local_fields(definition, logical_path, cache))
        case _:
            assert_never(definition)


class _ToolFields(TypedDict):
    """What every tool entry holds (``manifest._Tool``)."""

    name: str
    description: str
    logical_path: str
    source_id: str
    export_name: str
    factory: bool
    available_in_subagents: bool


class _LocalFields(TypedDict):
    """What a tool eve runs holds besides (``manifest._LocalTool``)."""

    input_schema: dict[str, Any]
    schema_source: SchemaSource
    output_schema: dict[str, Any] | None
    approval: Approval
    deferred: bool


def _local_fields(
    definition: FunctionTool | WorkflowTool, path: str, cache: CompileCache | None
) -> _LocalFields:
    model = definition.input_model
    schema = cache.json_schema(model) if cache and model else definition.json_schema()
    generated = model is not None
    return _LocalFields(
        input_schema=json_ready(schema, "input_schema", path, generated=generated) or {},
        schema_source="pydantic" if generated else "json-schema",
        output_schema=json_ready(
            definition.output_schema,
            "output_schema",
            path,
            generated=definition.output_schema_generated,
        ),
        approval=Approval(kind=definition.approval.kind),
        deferred=definition.deferred,
    )


def hook_entry(
    definition: HookDefinition,
    *,
    name: str,
    logical_path: str,
    source_id: str,
    export_name: str,
    factory: bool,
) -> HookEntry:
    """The manifest entry for one hook definition: the events it subscribes to."""
    return HookEntry(
        name=name,
        logical_path=logical_path,
        source_id=source_id,
        export_name=export_name,
        factory=factory,
        events=list(definition.events),
    )


def context_window(model: str | None, override: int | None) -> ContextWindow | None:
    """The node's window, from ``model_context_window_tokens`` or eve's table of models."""
    window = window_for(model, override)
    if window is None:
        return None
    return ContextWindow(
        tokens=window.tokens, max_output_tokens=window.max_output_tokens, source=window.source
    )


def agent_config(
    config: AgentConfigModel, *, output: Output | None = None, deps: Deps | None = None
) -> AgentConfig:
    """The manifest form of a validated ``define_agent`` call; ``output`` is its
    ``output_schema`` compiled (``compiler.output``), which needs the node's sources, and
    ``deps`` where its deps factory is (``compiler.instructions``)."""
    return AgentConfig(
        model=config.model,
        fallback=list(config.fallback),
        model_prices={
            model: ModelPrice(**declared.model_dump())
            for model, declared in sorted(config.model_prices.items())
        },
        description=config.description,
        reasoning=config.reasoning,
        limits=Limits(**config.limits.model_dump()),
        compaction=Compaction(**config.compaction.model_dump()) if config.compaction else None,
        model_context_window_tokens=config.model_context_window_tokens,
        context_window=context_window(config.model, config.model_context_window_tokens),
        builtin_tools=sorted(config.builtin_tools),
        tool_sets=sorted(set(config.tool_sets)),
        workspace=config.workspace,
        database_url_env=config.database_url_env,
        runtime_config=config.runtime_config,
        prompt_cache=PromptCache(**config.prompt_cache.model_dump()),
        retries=Retries(**config.retries.model_dump()),
        thinking=config.thinking,
        openai_api=config.openai_api,
        parallel_tools=config.parallel_tools,
        output=output,
        model_settings=ModelSettings(**config.model_settings.model_dump(mode="json")),
        deps=deps,
    )
