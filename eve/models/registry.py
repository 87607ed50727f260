"""Choose a model client from a model id; fall back to the offline model without credentials
where a person is there to be told (``eve run``, ``dev``, ``eval``), and refuse where not.

A prefix eve does not build in is looked up among the ``eve_model_providers`` of installed
``eve.plugins`` entry points, and only then: a built-in model never loads a plugin.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from eve.errors import ModelSDKMissing, ServedModelUnavailable, UnknownModel
from eve.manifest import OpenAIApi
from eve.models.base import ModelClient

CREDENTIALS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
#: providers with a key in one of several variables (Gemini: the SDK reads either), or
#: another way to sign in (Vertex AI: a project with Application Default Credentials)
ALTERNATIVE_CREDENTIALS = {
    "google": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "vertex": ("GOOGLE_CLOUD_PROJECT", "GOOGLE_API_KEY"),
}
# bedrock/ is in neither: its credentials come from the AWS chain (profiles, SSO, roles), which
# no variable shows, so a missing one fails the first call (ModelCredentialsMissing) instead
OFFLINE_DEFAULT = "offline/test"
BUILTIN_PROVIDERS = frozenset({"anthropic", "openai", "google", "vertex", "bedrock", "offline"})


@dataclass(frozen=True, kw_only=True)
class ModelChoice:
    client: ModelClient
    #: a line to show the person when eve chose something other than what was configured
    notice: str | None = None


def create_client(
    model_id: str, *, app_root: Path, env: Mapping[str, str], openai_api: OpenAIApi = "auto"
) -> ModelClient:
    """The client for ``provider/name``; providers' SDKs are imported only when chosen.

    ``openai_api`` is the node's ``define_agent(openai_api=…)``: which API an ``openai/``
    model speaks (``auto``: the Responses API on OpenAI's endpoint, else Chat Completions).
    """
    provider, _, name = model_id.partition("/")
    if provider == "offline":
        from eve.models.offline import OfflineScriptModel, OfflineTestModel

        if name == "test":
            return OfflineTestModel()
        if name.startswith("script:"):
            label = name.removeprefix("script:")
            return OfflineScriptModel(app_root / label, label=label)
    elif provider == "anthropic" and name:
        from eve.models.anthropic import AnthropicModel

        return AnthropicModel(
            name, api_key=env.get("ANTHROPIC_API_KEY"), base_url=env.get("ANTHROPIC_BASE_URL")
        )
    elif provider == "openai" and name:
        from eve.models.openai import OpenAIModel

        return OpenAIModel(
            name,
            api_key=env.get("OPENAI_API_KEY"),
            base_url=env.get("OPENAI_BASE_URL"),
            api=openai_api,
        )
    elif provider in ("google", "vertex") and name:
        return _gemini(provider, name, env)
    elif provider == "bedrock" and name:
        return _bedrock(name, env)
    from eve.plugins.provided import installed_plugins, model_providers

    plugins = model_providers(installed_plugins(), reserved=BUILTIN_PROVIDERS)
    if provider not in BUILTIN_PROVIDERS and provider in plugins and name:
        return plugins[provider].factory(name, env=env, app_root=app_root)
    offered = "".join(f", {prefix}/<model>" for prefix in sorted(plugins))
    raise UnknownModel(
        f"unknown model id {model_id!r}: use anthropic/<model>, google/<model>, "
        f"vertex/<model>, bedrock/<model id>, openai/<model>{offered}, "
        "offline/test or offline/script:<path> (other prefixes come from eve.plugins "
        "packages: install the one that provides it)",
        model_id=model_id,
    )


def _gemini(provider: str, name: str, env: Mapping[str, str]) -> ModelClient:
    try:
        from eve.models.gemini import gemini_model
    except ModuleNotFoundError as error:
        if not (error.name or "").startswith("google"):
            raise
        raise ModelSDKMissing(
            f"{provider}/{name} needs the google-genai package, which is not installed: "
            "pip install 'eve-durable[google]'",
            package="google-genai",
            extra="google",
        ) from error
    return gemini_model(provider, name, env)


def _bedrock(name: str, env: Mapping[str, str]) -> ModelClient:
    try:
        from eve.models.bedrock import bedrock_model
    except ModuleNotFoundError as error:
        if not (error.name or "").startswith(("boto3", "botocore")):
            raise
        raise ModelSDKMissing(
            f"bedrock/{name} needs the boto3 package, which is not installed: "
            "pip install 'eve-durable[bedrock]'",
            package="boto3",
            extra="bedrock",
        ) from error
    return bedrock_model(name, env)


def choose_model(
    configured: str | None,
    *,
    app_root: Path,
    env: Mapping[str, str] | None = None,
    openai_api: OpenAIApi = "auto",
    fallback: bool = True,
) -> ModelChoice:
    """The configured model, or ``offline/test`` with a notice when its key is missing.

    ``fallback=False`` (``eve serve``, an embedded app: nobody reads a notice there, and a
    server that answers with a fake model looks healthy) raises ``ServedModelUnavailable``
    instead of falling back.
    """
    env = os.environ if env is None else env
    model_id = configured or OFFLINE_DEFAULT
    provider = model_id.partition("/")[0]
    variable = CREDENTIALS.get(provider)
    if provider in ALTERNATIVE_CREDENTIALS:
        names = ALTERNATIVE_CREDENTIALS[provider]
        variable = next((v for v in names if env.get(v)), names[0])
    base_url = env.get(f"{variable.split('_')[0]}_BASE_URL") if variable else None
    if variable and not env.get(variable) and not (provider == "openai" and base_url):
        if not fallback:
            raise ServedModelUnavailable(
                f"{variable} is not set, so {model_id} cannot be served: set it, or pass "
                "--model offline/test (eve_app(model=...)) to serve the offline model on purpose",
                model_id=model_id,
                variable=variable,
            )
        return ModelChoice(
            client=create_client(OFFLINE_DEFAULT, app_root=app_root, env=env),
            notice=f"eve: {variable} is not set, so {model_id} is unavailable; using the "
            "offline model offline/test (no network; it calls each tool once with sample input)",
        )
    if configured is None:
        if not fallback:
            raise ServedModelUnavailable(
                "agent.py names no model, so there is none to serve: set "
                "define_agent(model=...), or pass --model offline/test (eve_app(model=...)) "
                "to serve the offline model on purpose",
                model_id=None,
                variable=None,
            )
        return ModelChoice(
            client=create_client(OFFLINE_DEFAULT, app_root=app_root, env=env),
            notice="eve: no model configured in agent.py; using the offline model offline/test",
        )
    return ModelChoice(
        client=create_client(model_id, app_root=app_root, env=env, openai_api=openai_api)
    )
