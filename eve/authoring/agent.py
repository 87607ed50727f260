"""``define_agent``: the configuration an ``agent.py`` exposes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

import pydantic

from eve._format import pydantic_problems
from eve.authoring._caller import caller_module
from eve.authoring.deps import DepsFactory, check_deps_factory
from eve.context.keys import Codec, ContextKey
from eve.errors import AuthoringError

BUILTIN_TOOL_NAMES = ("bash", "list_files", "read_file", "run_python", "write_file")


def _model_id(value: str) -> str:
    if "/" not in value:
        raise ValueError(
            f"model id {value!r} needs a provider prefix, e.g. 'anthropic/claude-sonnet-4-5', "
            "'openai/gpt-4o-mini' or 'offline/test'"
        )
    return value


ModelId = Annotated[str, pydantic.AfterValidator(_model_id)]
Reasoning = Literal["none", "minimal", "low", "medium", "high", "xhigh"]


class _Strict(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)


class LimitsConfig(_Strict):
    """Bounds on a session. ``max_turns`` caps model requests in one turn."""

    max_turns: int | None = pydantic.Field(default=None, ge=1)
    max_input_tokens_per_session: int | None = pydantic.Field(default=None, ge=1)
    max_output_tokens_per_session: int | None = pydantic.Field(default=None, ge=1)
    max_cost_usd_per_session: float | None = pydantic.Field(default=None, gt=0)
    session_timeout_seconds: float | None = pydantic.Field(default=None, gt=0)
    #: characters of one tool result the model reads; the rest is cut, with a marker
    max_tool_output_chars: int | None = pydantic.Field(default=None, ge=1)


class CompactionConfig(_Strict):
    """When the history passes ``threshold_percent`` of the context window, summarize it."""

    threshold_percent: int = pydantic.Field(default=80, ge=1, le=100)
    model: str | None = None
    #: the summary prompt, replacing eve's (see docs/sessions.md)
    instructions: str | None = pydantic.Field(default=None, min_length=1)


class PromptCacheConfig(_Strict):
    """Prompt caching: on by default where the provider takes cache breakpoints."""

    enabled: bool = True
    #: how long a cached prefix lives (Anthropic's two TTLs); a longer one costs more to write
    ttl: Literal["5m", "1h"] = "5m"


class RetryConfig(_Strict):
    """How a model call that fails in a way worth retrying is tried again."""

    #: every try, the first included (1 turns retrying off)
    attempts: int = pydantic.Field(default=4, ge=1, le=20)
    #: the longest wait between two tries, in seconds; a longer ``retry-after`` is not waited
    max_delay_seconds: float = pydantic.Field(default=30.0, gt=0, le=600)


def _prompt_cache(value: Any) -> Any:
    return {"enabled": value} if isinstance(value, bool) else value


class ModelSettingsConfig(_Strict):
    """How the model samples, passed to each provider's API as its own parameters
    (docs/models.md#model-settings). What is not set is the provider's default."""

    temperature: float | None = pydantic.Field(default=None, ge=0, le=2)
    #: the most tokens one response may have (eve's default: 4096)
    max_output_tokens: int | None = pydantic.Field(default=None, ge=1)
    top_p: float | None = pydantic.Field(default=None, gt=0, le=1)
    stop_sequences: tuple[str, ...] = pydantic.Field(default=(), max_length=16)
    seed: int | None = None
    #: more fields of the provider's request body, as JSON (the SDK's ``extra_body``)
    extra: dict[str, pydantic.JsonValue] = {}


def _model_chain(value: Any) -> Any:
    # ``model=["a/x", "b/y"]`` is ``model="a/x", fallback=["b/y"]``: one field each after this
    if isinstance(value, dict) and isinstance(value.get("model"), (list, tuple)):
        chain = list(value["model"])
        if not chain:
            raise ValueError("model is an empty list: name at least one model id")
        if value.get("fallback"):
            raise ValueError(
                "model is a list and fallback is set too: name the chain once, either "
                "model=[first, then, ...] or model=first, fallback=[then, ...]"
            )
        return {**value, "model": chain[0], "fallback": chain[1:]}
    return value


class ModelPriceConfig(_Strict):
    """USD per million tokens, for a model the price table does not know."""

    input_per_mtok: float = pydantic.Field(ge=0)
    output_per_mtok: float = pydantic.Field(ge=0)
    cache_read_per_mtok: float | None = pydantic.Field(default=None, ge=0)
    cache_write_per_mtok: float | None = pydantic.Field(default=None, ge=0)


class AgentConfigModel(_Strict):
    model: ModelId | None = None
    #: the models tried in order when ``model`` fails past its retries or is down
    #: (``define_agent(model=[first, then, ...])`` sets both fields)
    fallback: tuple[ModelId, ...] = ()
    #: declared prices by model id (a local model's), used instead of the price table
    model_prices: dict[ModelId, ModelPriceConfig] = {}
    description: str | None = None
    reasoning: Reasoning | None = None
    limits: LimitsConfig = LimitsConfig()
    compaction: CompactionConfig | None = None
    model_context_window_tokens: int | None = pydantic.Field(default=None, ge=1)
    builtin_tools: tuple[Literal["bash", "list_files", "read_file", "write_file"], ...] = ()
    #: tool sets of installed ``eve.plugins`` packages (``eve_tool_sets``); checked at compile
    tool_sets: tuple[str, ...] = ()
    workspace: str | None = None
    #: the environment variable holding the PostgreSQL URL (default ``EVE_DATABASE_URL``);
    #: a name, never the URL itself, so no password lands in agent.py or the artifacts
    database_url_env: str | None = pydantic.Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    #: the name of the context key a subagent's configuration is read from at each call
    runtime_config: str | None = pydantic.Field(default=None, min_length=1)
    #: ``False`` turns prompt caching off; ``{"ttl": "1h"}`` keeps cached prefixes longer
    prompt_cache: Annotated[PromptCacheConfig, pydantic.BeforeValidator(_prompt_cache)] = (
        PromptCacheConfig()
    )
    retries: RetryConfig = RetryConfig()
    #: how reasoning is asked for on Anthropic: ``auto`` by eve's table of models, or forced
    thinking: Literal["auto", "adaptive", "budget"] = "auto"
    #: which OpenAI API: ``auto`` (Responses on OpenAI's endpoint, Chat Completions on any
    #: other ``OPENAI_BASE_URL``), or forced
    openai_api: Literal["auto", "responses", "chat-completions"] = "auto"
    #: ``False``: the calls the model makes in one step run one after another
    parallel_tools: bool = True
    #: the type of the final answer: a pydantic model class (defined at module level under
    #: agent/) or a JSON Schema of an object; the answer is validated into it
    output_schema: type[pydantic.BaseModel] | dict[str, Any] | None = None
    #: how many times an answer that fails ``output_schema`` is shown to the model to fix
    output_retries: int = pydantic.Field(default=2, ge=0, le=10)
    #: temperature, max output tokens, top_p, stop sequences, seed and provider extras
    model_settings: ModelSettingsConfig = ModelSettingsConfig()
    #: the factory of the object tools, hooks and dynamic instructions reach as ``ctx.deps``,
    #: called at the start of each turn (``eve.authoring.deps``)
    deps: Annotated[DepsFactory, pydantic.AfterValidator(check_deps_factory)] | None = None

    @pydantic.model_validator(mode="before")
    @classmethod
    def _chain(cls, value: Any) -> Any:
        return _model_chain(value)

    @pydantic.model_validator(mode="after")
    def _fallback_needs_model(self) -> AgentConfigModel:
        if self.fallback and self.model is None:
            raise ValueError("fallback is set without model: name the first model to try")
        if self.model in self.fallback or len(set(self.fallback)) < len(self.fallback):
            raise ValueError("a model appears twice in the chain: name each model once")
        return self


class RuntimeConfig(_Strict):
    """A subagent's configuration for one call, set at run time through a context key.

    It replaces the compiled ``model``, ``reasoning``, ``limits`` and
    ``model_context_window_tokens`` as a whole: what it leaves out is unset for that call,
    not taken from agent.py.
    """

    model: ModelId
    reasoning: Reasoning | None = None
    limits: LimitsConfig = LimitsConfig()
    model_context_window_tokens: int | None = pydantic.Field(default=None, ge=1)


def runtime_config_key(name: str) -> ContextKey[RuntimeConfig]:
    """A context key that carries a subagent's ``RuntimeConfig``, checkpointed with the
    session (so a recovered turn calls the subagent as configured). Pass it to the
    subagent's ``define_agent(runtime_config=KEY)``; set it from a tool or hook of the
    caller with ``KEY.set(RuntimeConfig(model=...))`` or a plain dict."""
    return ContextKey(name, codec=Codec(encode=_config_data, decode=_config_value))


def _config_data(value: Any) -> Any:
    # an invalid value is kept as it is: the subagent call then fails with
    # SubagentConfigInvalid, which says what is wrong, rather than the checkpoint failing
    try:
        return RuntimeConfig.model_validate(value).model_dump(mode="json")
    except pydantic.ValidationError:
        return value


def _config_value(data: Any) -> Any:
    try:
        return RuntimeConfig.model_validate(data)
    except pydantic.ValidationError:
        return data


@dataclass(frozen=True, kw_only=True)
class AgentDefinition:
    """A validated ``define_agent`` call."""

    config: AgentConfigModel
    #: the module whose code made this definition (see the export rule)
    defined_in: str | None = None


def define_agent(**options: Any) -> AgentDefinition:
    """Configure an agent node.

    Keyword arguments: ``model`` (``"anthropic/claude-sonnet-4-5"``, or a list: a fallback
    chain tried in order), ``fallback`` (the models after ``model``), ``model_prices``
    (``{"openai/local": {"input_per_mtok": 0.1, "output_per_mtok": 0.2}}``), ``description``
    (required for subagents), ``reasoning``, ``limits`` (``{"max_turns": 10}``),
    ``compaction``, ``model_context_window_tokens``, ``builtin_tools``, ``tool_sets`` (plugin
    tool sets), ``workspace``, ``database_url_env``, ``prompt_cache`` (``False`` or
    ``{"ttl": "1h"}``), ``retries`` (``{"attempts": 4, "max_delay_seconds": 30}``),
    ``thinking``, ``openai_api``, ``output_schema`` (a pydantic model class or a JSON Schema:
    the final answer's type), ``output_retries`` and ``model_settings`` (``{"temperature":
    0.2, "max_output_tokens": 2000, "top_p": ..., "stop_sequences": [...], "seed": ...,
    "extra": {...}}``) and ``deps`` (a factory of the object tools reach as ``ctx.deps``,
    called with the turn's ``TurnInfo`` at the start of each turn); for a subagent,
    ``runtime_config`` (a key made with ``runtime_config_key``) to be configured at each
    call instead.
    Unknown keys are rejected.
    """
    key = options.get("runtime_config")
    if isinstance(key, ContextKey):
        options = {**options, "runtime_config": key.name}
    try:
        return AgentDefinition(
            config=AgentConfigModel.model_validate(options), defined_in=caller_module()
        )
    except pydantic.ValidationError as error:
        problems = pydantic_problems(error, top="define_agent")
        raise AuthoringError(f"define_agent: {problems}") from None
