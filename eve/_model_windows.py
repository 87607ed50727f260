"""Known models' context windows and output limits, and the window a node will use.

A shared module (the compiler records each node's window in the manifest, the runtime falls
back to it for a model chosen at run time), so it imports no eve package. The figures are
the providers' published limits (Anthropic "Models overview", OpenAI "Models" and Google
"Gemini models" pages); a model not listed has no known window unless
``model_context_window_tokens`` gives one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

#: where a window came from: this table, or the agent's ``model_context_window_tokens``
WindowSource = Literal["model-table", "model_context_window_tokens"]


@dataclass(frozen=True, kw_only=True)
class KnownWindow:
    #: tokens a request may hold, input and output together
    tokens: int
    #: the most tokens one response may have
    max_output_tokens: int


#: model id (or the start of one: dated snapshots such as ``claude-sonnet-4-5-20250929``
#: match their family) → its window
KNOWN_WINDOWS: dict[str, KnownWindow] = {
    "anthropic/claude-opus-4-1": KnownWindow(tokens=200_000, max_output_tokens=32_000),
    "anthropic/claude-opus-4": KnownWindow(tokens=200_000, max_output_tokens=32_000),
    "anthropic/claude-sonnet-4-5": KnownWindow(tokens=200_000, max_output_tokens=64_000),
    "anthropic/claude-sonnet-4": KnownWindow(tokens=200_000, max_output_tokens=64_000),
    "anthropic/claude-haiku-4-5": KnownWindow(tokens=200_000, max_output_tokens=64_000),
    "anthropic/claude-3-7-sonnet": KnownWindow(tokens=200_000, max_output_tokens=64_000),
    "anthropic/claude-3-5-haiku": KnownWindow(tokens=200_000, max_output_tokens=8_192),
    "openai/gpt-5": KnownWindow(tokens=400_000, max_output_tokens=128_000),
    "openai/gpt-4.1": KnownWindow(tokens=1_047_576, max_output_tokens=32_768),
    "openai/gpt-4o": KnownWindow(tokens=128_000, max_output_tokens=16_384),
    "openai/o3": KnownWindow(tokens=200_000, max_output_tokens=100_000),
    "openai/o4-mini": KnownWindow(tokens=200_000, max_output_tokens=100_000),
    # Gemini ("Gemini models", https://ai.google.dev/gemini-api/docs/models): the input limit
    # (1,048,576) is the window; the same models on Vertex AI have the same limits
    **{
        f"{provider}/{model}": KnownWindow(tokens=1_048_576, max_output_tokens=output)
        for provider in ("google", "vertex")
        for model, output in (
            ("gemini-3-pro", 65_536),
            ("gemini-3-flash", 65_536),
            ("gemini-2.5-pro", 65_536),
            ("gemini-2.5-flash", 65_536),
            ("gemini-2.0-flash", 8_192),
        )
    },
    # the offline models have a small window so compaction is reached in tests and benches
    "offline/test": KnownWindow(tokens=16_000, max_output_tokens=4_096),
    "offline/script": KnownWindow(tokens=16_000, max_output_tokens=4_096),
}

#: the geography prefixes of Bedrock's cross-region inference profiles (``us.anthropic.…``)
_BEDROCK_GEOGRAPHIES = ("", "us.", "eu.", "apac.", "global.", "jp.", "au.", "ca.", "us-gov.")
# Bedrock ("Supported foundation models in Amazon Bedrock"): Claude has the limits it has on
# Anthropic's API; Amazon Nova 1 those of its model cards (Micro 128K, Lite and Pro 300K,
# 5,120 out). Other families are not listed: their limits vary by model and region.
KNOWN_WINDOWS.update(
    {
        f"bedrock/{geography}{vendor_model}": window
        for geography in _BEDROCK_GEOGRAPHIES
        for vendor_model, window in (
            *(
                (f"anthropic.{key.removeprefix('anthropic/')}", window)
                for key, window in KNOWN_WINDOWS.items()
                if key.startswith("anthropic/")
            ),
            ("amazon.nova-micro", KnownWindow(tokens=128_000, max_output_tokens=5_120)),
            ("amazon.nova-lite", KnownWindow(tokens=300_000, max_output_tokens=5_120)),
            ("amazon.nova-pro", KnownWindow(tokens=300_000, max_output_tokens=5_120)),
        )
    }
)


#: what follows a family's id in a longer one (``openai/gpt-5-mini``, ``offline/script:x``)
_FAMILY_SEPARATORS = "-:"


# each model request asks (its output limit, its window): a process runs a handful of models
@lru_cache(maxsize=256)
def known_window(model: str | None) -> KnownWindow | None:
    """The table's entry for ``model``: its own, else the longest entry it starts with
    (``openai/gpt-5-mini`` is ``openai/gpt-5``'s family; ``offline/script:x.json`` is
    ``offline/script``); None when the table does not know it."""
    if not model:
        return None
    # the keys that can match are the id itself and its starts that end before a "-" or a
    # ":", so a few dict lookups, longest first, replace a scan of the whole table (which
    # every model request paid, twice, once the table grew past a hundred entries)
    if model in KNOWN_WINDOWS:
        return KNOWN_WINDOWS[model]
    for end in range(len(model) - 1, 0, -1):
        if model[end] in _FAMILY_SEPARATORS and model[:end] in KNOWN_WINDOWS:
            return KNOWN_WINDOWS[model[:end]]
    return None


@dataclass(frozen=True, kw_only=True)
class Window:
    tokens: int
    max_output_tokens: int | None
    source: WindowSource


def window_for(model: str | None, override: int | None) -> Window | None:
    """The window a node uses: ``override`` (``model_context_window_tokens``) first, then
    the table; None when neither knows one."""
    known = known_window(model)
    limit = known.max_output_tokens if known is not None else None
    if override is not None:
        return Window(
            tokens=override, max_output_tokens=limit, source="model_context_window_tokens"
        )
    if known is None:
        return None
    return Window(tokens=known.tokens, max_output_tokens=limit, source="model-table")
