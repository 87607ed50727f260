"""``model_settings`` as each provider's API takes them: what it has no parameter for is
refused with ``ModelSettingUnsupported`` (a seed that was asked for and silently dropped
would make a run look reproducible when it is not)."""

from __future__ import annotations

from typing import Any

from eve.errors import ModelSettingUnsupported
from eve.manifest import ModelSettings

#: the fields a provider's API may lack, as ``model_settings`` names them
_OPTIONAL = ("temperature", "top_p", "stop_sequences", "seed")


def refuse_unsupported(
    settings: ModelSettings, *, api: str, provider: str, supported: set[str], hint: str = ""
) -> None:
    """Raise for the first setting that is set and that ``api`` does not take."""
    for name in _OPTIONAL:
        value = getattr(settings, name)
        if value not in (None, []) and name not in supported:
            raise ModelSettingUnsupported(
                f"model_settings.{name} is set, and {api} has no such parameter: remove it "
                f"from define_agent(model_settings=...){hint}",
                provider=provider,
                setting=name,
            )


def extra_body(settings: ModelSettings) -> dict[str, Any] | None:
    """``model_settings.extra``: more fields of the request body (the SDKs' ``extra_body``)."""
    return dict(settings.extra) if settings.extra else None
