"""One ``generateContent`` request from a ``ModelRequest``: contents, tools and the config.

Everything here is a pure function of the request, in the API's own JSON (camelCase), so a
step replayed after a crash (its recorded parts decoded from JSON) sends exactly the parts it
sent the first time.

* **History.** Eve's messages become ``user`` and ``model`` contents; adjacent messages of one
  role share a content (every function response of a step goes in the one user content after
  the model's calls: "Function calling", https://ai.google.dev/gemini-api/docs/function-calling).
* **Thought signatures** ("Thought signatures",
  https://ai.google.dev/gemini-api/docs/thought-signatures) go back on the exact part they came
  with. A thought or a text part that carried one is recorded as it came (a ``ReasoningPart``
  or a ``ProviderPart``); a function call's is recorded as a ``ReasoningPart`` with no text whose
  ``item_id`` is the call's id, right before the call, and is put back on that call here.
  A Gemini 3 model refuses a function call of the current turn without its signature, so a
  call that never had one (another provider's, in a fallback) gets the documented
  placeholder ``skip_thought_signature_validator``.
* **Call ids.** The API may send a function call without an ``id``; eve then makes one up
  (``GENERATED_ID_PREFIX``) and never sends it back, so the API sees only its own ids.
"""

from __future__ import annotations

import base64
from typing import Any

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
from eve.models._turns import merge_roles
from eve.models.base import ModelRequest
from eve.models.gemini_models import gemini_traits, max_output_tokens, thinking_config

Part = dict[str, Any]
Content = dict[str, Any]

#: the start of a call id eve made up for a function call the API sent without one
GENERATED_ID_PREFIX = "eve-gemini-"
#: the signature a function call without one is given for a Gemini 3 model ("Thought
#: signatures", "What if I transfer a conversation from another model?")
PLACEHOLDER_SIGNATURE = "skip_thought_signature_validator"
#: the providers whose provider tools a Gemini model runs (both speak the same API)
GEMINI_PROVIDERS = ("google", "vertex")


def gemini_contents(provider: str, messages: list[Message], *, placeholder: bool) -> list[Content]:
    """Eve's history as contents; ``placeholder``: sign unsigned function calls (Gemini 3)."""
    names = _call_names(messages)
    pieces = (_parts_of(provider, m, names, placeholder=placeholder) for m in messages)
    contents = merge_roles(pieces, key="parts")
    for content in contents:
        if content["role"] == "user":
            # function responses first: a media part of a tool result follows them all
            content["parts"].sort(key=lambda part: "functionResponse" not in part)
    return contents


def _call_names(messages: list[Message]) -> dict[str, str]:
    return {
        part.id: part.name
        for message in messages
        if isinstance(message, AssistantMessage)
        for part in message.parts
        if isinstance(part, ToolCallPart)
    }


def _parts_of(
    provider: str, message: Message, names: dict[str, str], *, placeholder: bool
) -> tuple[str, list[Part]]:
    match message:
        case UserMessage():
            return "user", [_user_part(p) for p in message.parts if _nonempty(p)]
        case ToolResultMessage():
            return "user", _function_response(message, names)
        case AssistantMessage():
            return "model", _model_parts(provider, message, placeholder=placeholder)


def _nonempty(part: TextPart | ImagePart | DocumentPart) -> bool:
    return not isinstance(part, TextPart) or bool(part.text)


def _user_part(part: TextPart | ImagePart | DocumentPart) -> Part:
    match part:
        case TextPart():
            return {"text": part.text}
        case ImagePart() | DocumentPart():
            if part.url is not None:
                return {"fileData": {"fileUri": part.url, "mimeType": part.media_type}}
            data = base64.b64encode(part.data or b"").decode("ascii")
            return {"inlineData": {"mimeType": part.media_type, "data": data}}


def _function_response(message: ToolResultMessage, names: dict[str, str]) -> list[Part]:
    # "Use 'output' key to specify function output and 'error' key to specify error
    # details" (FunctionResponse.response, API reference)
    key = "error" if message.is_error else "output"
    response: Part = {
        "name": message.name or names.get(message.tool_call_id, ""),
        "response": {key: message.content},
    }
    if not message.tool_call_id.startswith(GENERATED_ID_PREFIX):
        response["id"] = message.tool_call_id
    media = [_user_part(p) for p in message.parts if not isinstance(p, TextPart)]
    return [{"functionResponse": response}, *media]


def _model_parts(provider: str, message: AssistantMessage, *, placeholder: bool) -> list[Part]:
    kept = parts_for(provider, message.parts)
    signatures = {
        p.item_id: p.signature
        for p in kept
        if isinstance(p, ReasoningPart) and p.item_id and p.signature and not p.text
    }
    parts: list[Part] = []
    for part in kept:
        match part:
            case TextPart():
                if part.text:
                    parts.append({"text": part.text})
            case ReasoningPart():
                if part.item_id is None:  # a thought; a call's signature goes on the call
                    parts.append(_thought(part))
            case ToolCallPart():
                parts.append(_function_call(part, signatures.get(part.id)))
            case ProviderPart():
                parts.append(dict(part.block))
    calls = [p for p in parts if "functionCall" in p]
    if placeholder and calls and not any("thoughtSignature" in p for p in calls):
        calls[0]["thoughtSignature"] = PLACEHOLDER_SIGNATURE
    return parts


def _thought(part: ReasoningPart) -> Part:
    thought: Part = {"text": part.text, "thought": True}
    if part.signature:
        thought["thoughtSignature"] = part.signature
    return thought


def _function_call(part: ToolCallPart, signature: str | None) -> Part:
    call: Part = {"name": part.name, "args": part.input}
    if not part.id.startswith(GENERATED_ID_PREFIX):
        call["id"] = part.id
    out: Part = {"functionCall": call}
    if signature:
        out["thoughtSignature"] = signature
    return out


def gemini_tools(provider: str, request: ModelRequest) -> list[Part]:
    """Eve's tools as function declarations, and Gemini's own tools (``googleSearch``,
    ``codeExecution``, ``urlContext``) as the API declares them."""
    tools: list[Part] = []
    if request.tools:
        declarations = [
            {"name": t.name, "description": t.description, "parametersJsonSchema": t.input_schema}
            for t in request.tools
        ]
        tools.append({"functionDeclarations": declarations})
    tools.extend(
        # the API validates its own tools' configs; eve passes them through untouched
        {p.type: dict(p.config)}
        for p in request.provider_tools
        if p.provider in GEMINI_PROVIDERS
    )
    return tools


def request_config(provider: str, model: str, request: ModelRequest) -> dict[str, Any]:
    """The ``GenerateContentConfig`` fields for ``request`` (the API's JSON names).

    ``model_settings.extra`` adds config fields (``cachedContent``, ``safetySettings``,
    ``responseModalities``). With ``cachedContent`` (explicit context caching, "Context
    caching", https://ai.google.dev/gemini-api/docs/caching) the system instruction and tools
    live in the cache, and the API refuses a request that repeats them, so they are left out.
    """
    settings = request.settings
    limit = max_output_tokens(model, request.max_output_tokens, request.reasoning)
    config: dict[str, Any] = {"maxOutputTokens": limit}
    extra = dict(settings.extra)
    cached = "cachedContent" in extra or "cached_content" in extra
    if request.system and not cached:
        config["systemInstruction"] = {"role": "user", "parts": [{"text": request.system}]}
    tools = gemini_tools(provider, request)
    if tools and not cached:
        config["tools"] = tools
    optional = {
        "temperature": settings.temperature,
        "topP": settings.top_p,
        "stopSequences": settings.stop_sequences or None,
        "seed": settings.seed,
    }
    config.update({name: value for name, value in optional.items() if value is not None})
    thinking = thinking_config(model, request.reasoning, request.thinking)
    if thinking:
        config["thinkingConfig"] = thinking
    if request.output_schema is not None:
        config["responseMimeType"] = "application/json"
        config["responseJsonSchema"] = request.output_schema
    config.update(extra)
    return config


def request_contents(provider: str, model: str, request: ModelRequest) -> list[Content]:
    """The ``contents`` of the request, signed as ``model`` needs."""
    placeholder = gemini_traits(model).thinking == "level"
    return gemini_contents(provider, request.messages, placeholder=placeholder)
