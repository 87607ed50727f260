"""One Messages API request from a ``ModelRequest``: history, tools, thinking, cache breakpoints.

Everything here is a pure function of the request, so a step replayed after a crash (its
recorded parts decoded from JSON) sends exactly the blocks it sent the first time.

* **History.** Eve's messages become alternating user and assistant turns. An assistant
  message's parts go back in the order the model produced them and, for this provider's own
  parts, verbatim: thinking with its signature, redacted thinking with its data, server tool
  blocks and cited text as the API returned them. Another provider's parts go through
  ``eve.messages.parts_for`` (its reasoning is dropped, its native blocks become their text).
* **Media.** Image and document parts become ``image`` and ``document`` blocks (base64 or
  URL sources), in user turns and inside ``tool_result`` content.
* **Prompt caching** (on unless ``define_agent(prompt_cache=False)``): a breakpoint at the end
  of the system prompt (or of the tools, without one), which caches tools and system
  together, and one on the newest user turn and on the one before it. Each step the newest
  breakpoint writes the prefix up to it and the one before reads what the previous step
  wrote, so the breakpoints move forward with the loop; 3 is within the API's limit of 4
  (Anthropic, "Prompt caching",
  https://platform.claude.com/docs/en/build-with-claude/prompt-caching).
"""

from __future__ import annotations

import base64
from typing import Any

from eve.manifest import ModelSettings, PromptCache
from eve.messages import (
    AssistantMessage,
    DocumentPart,
    ImagePart,
    Message,
    ProviderPart,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
    parts_for,
)
from eve.models._settings import extra_body, refuse_unsupported
from eve.models._turns import merge_roles
from eve.models.anthropic_models import Thinking, model_traits, thinking_for
from eve.models.base import ModelRequest

PROVIDER = "anthropic"

Block = dict[str, Any]
Turn = dict[str, Any]

# blocks that open an assistant turn which thinking may continue
_THINKING_TYPES = ("thinking", "redacted_thinking")


def anthropic_messages(messages: list[Message]) -> list[Turn]:
    """Eve's history as Messages API turns; adjacent user-side messages share one turn (and
    a paused response continued, ``pause_turn``, is one assistant turn)."""
    return merge_roles((_blocks_of(m) for m in messages), key="content")


def _blocks_of(message: Message) -> tuple[str, list[Block]]:
    match message:
        case UserMessage():
            return "user", [_user_block(p) for p in message.parts if _nonempty(p)]
        case ToolResultMessage():
            return "user", [_tool_result(message)]
        case AssistantMessage():
            blocks = [_assistant_block(p) for p in parts_for(PROVIDER, message.parts)]
            return "assistant", [b for b in blocks if b is not None]


def _nonempty(part: TextPart | ImagePart | DocumentPart) -> bool:
    # the API rejects empty text blocks
    return not isinstance(part, TextPart) or bool(part.text)


def _user_block(part: TextPart | ImagePart | DocumentPart) -> Block:
    match part:
        case TextPart():
            return {"type": "text", "text": part.text}
        case ImagePart():
            return {"type": "image", "source": _source(part)}
        case DocumentPart():
            block: Block = {"type": "document", "source": _source(part)}
            if part.name:
                block["title"] = part.name
            return block


def _source(part: ImagePart | DocumentPart) -> Block:
    if part.url is not None:
        return {"type": "url", "url": part.url}
    data = part.data or b""
    if isinstance(part, DocumentPart) and part.media_type == "text/plain":
        return {"type": "text", "media_type": "text/plain", "data": data.decode("utf-8")}
    encoded = base64.b64encode(data).decode("ascii")
    return {"type": "base64", "media_type": part.media_type, "data": encoded}


def _tool_result(message: ToolResultMessage) -> Block:
    parts = [p for p in message.parts if _nonempty(p)]
    content: str | list[Block]
    if all(isinstance(p, TextPart) for p in parts):
        content = message.content
    else:
        content = [_user_block(p) for p in parts]
    return {
        "type": "tool_result",
        "tool_use_id": message.tool_call_id,
        "content": content,
        "is_error": message.is_error,
    }


def _assistant_block(
    part: TextPart | ReasoningPart | ToolCallPart | ProviderPart,
) -> Block | None:
    match part:
        case TextPart():
            return {"type": "text", "text": part.text} if part.text else None
        case ReasoningPart(redacted=True):
            return {"type": "redacted_thinking", "data": part.payload or ""}
        case ReasoningPart():
            if part.signature is None:
                return None  # thinking the API never signed is not accepted back
            return {"type": "thinking", "thinking": part.text, "signature": part.signature}
        case ToolCallPart():
            return {"type": "tool_use", "id": part.id, "name": part.name, "input": part.input}
        case ProviderPart():
            return dict(part.block)


def anthropic_tools(request: ModelRequest) -> list[Block]:
    """Eve's tools and this provider's own tools, as the Messages API declares them."""
    tools: list[Block] = [
        {"name": t.name, "description": t.description, "input_schema": t.input_schema}
        for t in request.tools
    ]
    tools.extend(
        # The provider validates its own tool configs; eve passes them through untouched.
        {"type": p.type, "name": p.name, **p.config}
        for p in request.provider_tools
        if p.provider == PROVIDER
    )
    return tools


def _cache_control(cache: PromptCache) -> Block:
    # 5 minutes is the API's default TTL; saying nothing keeps older gateways happy
    return {"type": "ephemeral", "ttl": "1h"} if cache.ttl == "1h" else {"type": "ephemeral"}


def add_cache_breakpoints(
    system: list[Block], tools: list[Block], turns: list[Turn], cache: PromptCache
) -> None:
    """Mark the prefix breakpoints in place (see the module docstring)."""
    if not cache.enabled:
        return
    control = _cache_control(cache)
    if system:
        system[-1]["cache_control"] = control
    elif tools:
        tools[-1]["cache_control"] = control
    users = [t for t in turns if t["role"] == "user"]
    for turn in users[-2:]:
        turn["content"][-1]["cache_control"] = control


def _continues_unthought_tool_loop(turns: list[Turn]) -> bool:
    """The request answers tool calls of an assistant turn that did not start with thinking
    (one from another provider, or from before reasoning was on): with thinking on, the API
    rejects it, so this request goes without (Anthropic, "Extended thinking", "Preserving
    thinking blocks")."""
    if len(turns) < 2 or turns[-1]["role"] != "user":
        return False
    if not any(b.get("type") == "tool_result" for b in turns[-1]["content"]):
        return False
    assistant = turns[-2]["content"]
    return not assistant or assistant[0].get("type") not in _THINKING_TYPES


def request_params(model: str, request: ModelRequest) -> dict[str, Any]:
    """The keyword arguments of ``messages.create`` for ``request`` (``stream`` aside)."""
    turns = anthropic_messages(request.messages)
    tools = anthropic_tools(request)
    system: list[Block] = [{"type": "text", "text": request.system}] if request.system else []
    add_cache_breakpoints(system, tools, turns, request.prompt_cache)
    thinking = thinking_for(model, request.reasoning, request.thinking)
    if _continues_unthought_tool_loop(turns):
        thinking = Thinking()
    params: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_output_tokens + thinking.extra_tokens,
        "messages": turns,
    }
    if system:
        params["system"] = system
    if tools:
        params["tools"] = tools
    if thinking.thinking is not None:
        params["thinking"] = thinking.thinking
    output: dict[str, Any] = {}
    if thinking.effort is not None:
        output["effort"] = thinking.effort
    if request.output_schema is not None and model_traits(model).structured_output:
        output["format"] = {"type": "json_schema", "schema": request.output_schema}
    if output:
        params["output_config"] = output
    params.update(_sampling(request.settings))
    return params


def _sampling(settings: ModelSettings) -> dict[str, Any]:
    """``model_settings`` as Messages API parameters
    (https://docs.anthropic.com/en/api/messages: temperature, top_p, stop_sequences; no seed).
    With extended thinking the API takes no temperature change; it answers that with a 400."""
    refuse_unsupported(
        settings,
        api="Anthropic's Messages API",
        provider="anthropic",
        supported={"temperature", "top_p", "stop_sequences"},
    )
    params: dict[str, Any] = {}
    if settings.temperature is not None:
        params["temperature"] = settings.temperature
    if settings.top_p is not None:
        params["top_p"] = settings.top_p
    if settings.stop_sequences:
        params["stop_sequences"] = list(settings.stop_sequences)
    if (extra := extra_body(settings)) is not None:
        params["extra_body"] = extra
    return params
