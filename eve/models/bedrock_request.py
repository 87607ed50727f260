"""One Converse / ConverseStream request from a ``ModelRequest``, as ``boto3`` takes it.

Everything here is a pure function of the request, so a step replayed after a crash (its
recorded parts decoded from JSON) sends exactly the blocks it sent the first time. The field
names and shapes are the API reference's ("Converse", "ConverseStream", "ContentBlock",
https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html).

* **History.** Eve's messages become ``user`` and ``assistant`` messages, alternating, the
  first a user's: adjacent messages of one role share one (every ``toolResult`` of a step
  goes in the one user message after the ``toolUse`` blocks, results first). Blank text is
  left out: the API refuses a blank ``text`` block.
* **Reasoning** (``reasoningContent``) goes back verbatim, its ``signature`` with it, and
  redacted reasoning as the bytes it came as; reasoning the API never signed is not sent
  (Claude refuses it), nor another provider's (``parts_for``).
* **Tools.** The API refuses ``toolUse`` and ``toolResult`` blocks in a request without a
  ``toolConfig``, so a request that declares no tools (a compaction's summary) gets the
  calls and results of its history as text.
* **Media.** Images and documents go as ``bytes`` or an ``s3Location``; Converse takes no
  other URL (``ImageSource``, ``DocumentSource``), so an http(s) URL is refused before
  anything is sent.
* **Prompt caching** (``bedrock_models`` says which models take it): a ``cachePoint`` after
  the system prompt (after the tools, without one, on Claude), and one at the end of each of
  the two newest user messages, as the Anthropic adapter places its breakpoints: the newest
  writes the prefix, the one before reads what the previous step wrote; 3 is within the 4
  the API allows ("Prompt caching",
  https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Any

from eve.errors import AttachmentUnsupported
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
from eve.models._settings import refuse_unsupported
from eve.models._turns import merge_roles
from eve.models.base import ModelRequest
from eve.models.bedrock_models import (
    BedrockReasoning,
    BedrockTraits,
    bedrock_traits,
    reasoning_for,
)

PROVIDER = "bedrock"

Block = dict[str, Any]
Turn = dict[str, Any]

_IMAGE_FORMATS = {
    "image/png": "png",
    "image/jpeg": "jpeg",
    "image/gif": "gif",
    "image/webp": "webp",
}
_DOCUMENT_FORMATS = {
    "application/pdf": "pdf",
    "text/csv": "csv",
    "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/html": "html",
    "text/plain": "txt",
    "text/markdown": "md",
}
# DocumentBlock.name: "alphanumeric characters, whitespace characters (no more than one in a
# row), hyphens, parentheses, and square brackets"
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9\s\-()\[\]]+")


def bedrock_messages(messages: list[Message], *, tools: bool) -> list[Turn]:
    """Eve's history as Converse messages; ``tools``: the request has a ``toolConfig``."""
    names = {
        part.id: part.name
        for message in messages
        if isinstance(message, AssistantMessage)
        for part in message.tool_calls
    }
    turns = merge_roles((_blocks_of(m, names, tools=tools) for m in messages), key="content")
    for turn in turns:
        if turn["role"] == "user":
            # the results of a step's calls first, then what the user added
            turn["content"].sort(key=lambda block: "toolResult" not in block)
    return turns


def _blocks_of(message: Message, names: dict[str, str], *, tools: bool) -> tuple[str, list[Block]]:
    match message:
        case UserMessage():
            return "user", [_user_block(p) for p in message.parts if _nonempty(p)]
        case ToolResultMessage():
            if not tools:
                name = message.name or names.get(message.tool_call_id, "")
                return "user", [{"text": f"[result of {name}]: {message.content}"}]
            return "user", [_tool_result(message)]
        case AssistantMessage():
            kept = parts_for(PROVIDER, message.parts)
            blocks = [_assistant_block(p, tools=tools) for p in kept]
            return "assistant", [b for b in blocks if b is not None]


def _nonempty(part: TextPart | ImagePart | DocumentPart) -> bool:
    return not isinstance(part, TextPart) or bool(part.text.strip())


def _user_block(part: TextPart | ImagePart | DocumentPart) -> Block:
    match part:
        case TextPart():
            return {"text": part.text}
        case ImagePart():
            image_format = _IMAGE_FORMATS.get(part.media_type)
            if image_format is None:
                raise _unsupported(part, "image/png, image/jpeg, image/gif or image/webp")
            return {"image": {"format": image_format, "source": _source(part)}}
        case DocumentPart():
            document_format = _DOCUMENT_FORMATS.get(part.media_type)
            if document_format is None:
                raise _unsupported(part, ", ".join(sorted(_DOCUMENT_FORMATS)))
            document = {"format": document_format, "name": _document_name(part)}
            return {"document": {**document, "source": _source(part)}}


def _unsupported(part: ImagePart | DocumentPart, takes: str) -> AttachmentUnsupported:
    return AttachmentUnsupported(
        f"bedrock: Converse takes no {part.kind} of type {part.media_type} (it takes {takes})",
        media_type=part.media_type,
        source=part.url or part.kind,
    )


def _source(part: ImagePart | DocumentPart) -> Block:
    if part.url is None:
        return {"bytes": part.data or b""}
    if part.url.startswith("s3://"):
        return {"s3Location": {"uri": part.url}}
    raise AttachmentUnsupported(
        f"bedrock: Converse takes an {part.kind} as bytes or an s3:// location, not the URL "
        f"{part.url}: attach the file's content instead",
        media_type=part.media_type,
        source=part.url,
    )


def _document_name(part: DocumentPart) -> str:
    """The part's name in the characters the API allows, else one made from the content
    (the same every time, so a replayed step sends the same request)."""
    stem = (part.name or "").rsplit(".", 1)[0]
    name = " ".join(_NAME_UNSAFE.sub(" ", stem).split())
    if name:
        return name
    digest = hashlib.sha256(part.data or (part.url or "").encode()).hexdigest()
    return f"document-{digest[:12]}"


def _tool_result(message: ToolResultMessage) -> Block:
    media = [_user_block(p) for p in message.media]
    # a result's content may not be empty: its text stays, even blank, unless media fill it
    text = [{"text": message.content}] if message.content.strip() or not media else []
    content: list[Block] = [*text, *media]
    result: Block = {"toolUseId": message.tool_call_id, "content": content}
    result["status"] = "error" if message.is_error else "success"
    return {"toolResult": result}


def _assistant_block(
    part: TextPart | ReasoningPart | ToolCallPart | ProviderPart, *, tools: bool
) -> Block | None:
    match part:
        case TextPart():
            return {"text": part.text} if part.text.strip() else None
        case ReasoningPart(redacted=True):
            return {"reasoningContent": {"redactedContent": _redacted_bytes(part.payload)}}
        case ReasoningPart():
            if part.signature is None:
                return None  # reasoning the API never signed is not accepted back
            text = {"text": part.text, "signature": part.signature}
            return {"reasoningContent": {"reasoningText": text}}
        case ToolCallPart():
            if not tools:
                return {"text": f"[called {part.name}({json.dumps(part.input)})]"}
            return {"toolUse": {"toolUseId": part.id, "name": part.name, "input": part.input}}
        case ProviderPart():
            return dict(part.block)


def _redacted_bytes(payload: str | None) -> bytes:
    # kept as base64 text (a stored step is JSON); the API takes the bytes it sent
    return base64.b64decode(payload or "")


def _without_status(turns: list[Turn]) -> None:
    for turn in turns:
        for block in turn["content"]:
            if "toolResult" in block:
                block["toolResult"].pop("status", None)


def bedrock_tools(request: ModelRequest) -> list[Block]:
    """Eve's tools as Converse ``toolSpec``s (the API refuses a blank description)."""
    tools: list[Block] = []
    for tool in request.tools:
        spec: Block = {"name": tool.name, "inputSchema": {"json": tool.input_schema}}
        if tool.description.strip():
            spec["description"] = tool.description
        tools.append({"toolSpec": spec})
    return tools


def _cache_point(cache: PromptCache) -> Block:
    # 5 minutes is the default TTL; saying nothing keeps models without a 1-hour one happy
    point: Block = {"type": "default"}
    if cache.ttl == "1h":
        point["ttl"] = "1h"
    return {"cachePoint": point}


def add_cache_points(
    system: list[Block],
    tools: list[Block],
    turns: list[Turn],
    *,
    traits: BedrockTraits,
    cache: PromptCache,
) -> None:
    """Mark the cache points in place (see the module docstring)."""
    if not (cache.enabled and traits.prompt_cache):
        return
    point = _cache_point(cache)
    if system:
        system.append(dict(point))
    elif tools and traits.cache_tools:
        tools.append(dict(point))
    users = [t for t in turns if t["role"] == "user"]
    for turn in users[-2:]:
        last = turn["content"][-1]
        # a cache point right after an image or a document is refused; that turn goes without
        if "image" not in last and "document" not in last:
            turn["content"].append(dict(point))


def _inference(settings: ModelSettings, max_tokens: int) -> dict[str, Any]:
    """``model_settings`` as ``inferenceConfig`` (``InferenceConfiguration``: maxTokens,
    temperature, topP, stopSequences; Converse has no seed)."""
    refuse_unsupported(
        settings,
        api="Bedrock's Converse API",
        provider=PROVIDER,
        supported={"temperature", "top_p", "stop_sequences"},
    )
    config: dict[str, Any] = {"maxTokens": max_tokens}
    if settings.temperature is not None:
        config["temperature"] = settings.temperature
    if settings.top_p is not None:
        config["topP"] = settings.top_p
    if settings.stop_sequences:
        config["stopSequences"] = list(settings.stop_sequences)
    return config


def _continues_unthought_tool_loop(turns: list[Turn]) -> bool:
    """The request answers tool calls of an assistant message that did not start with
    reasoning (another provider's, or from before reasoning was on): with thinking on, Claude
    refuses it, so this request goes without ("Extended thinking", "Extended thinking with
    tool use", https://docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-extended-thinking.html)."""
    if len(turns) < 2 or turns[-1]["role"] != "user":
        return False
    if not any("toolResult" in block for block in turns[-1]["content"]):
        return False
    assistant = turns[-2]["content"]
    return not assistant or "reasoningContent" not in assistant[0]


def request_params(model: str, request: ModelRequest) -> dict[str, Any]:
    """The keyword arguments of ``converse_stream`` for ``request``.

    ``model_settings.extra`` adds top-level fields (``guardrailConfig``,
    ``performanceConfig``); its ``additionalModelRequestFields`` are merged with the ones eve
    sets for reasoning (a model's own parameters, such as ``top_k``).
    """
    traits = bedrock_traits(model)
    tools = bedrock_tools(request)
    turns = bedrock_messages(request.messages, tools=bool(tools))
    if not traits.tool_result_status:
        _without_status(turns)
    system: list[Block] = [{"text": request.system}] if request.system.strip() else []
    add_cache_points(system, tools, turns, traits=traits, cache=request.prompt_cache)
    reasoning = reasoning_for(model, request.reasoning, request.thinking)
    if traits.family == "anthropic" and _continues_unthought_tool_loop(turns):
        reasoning = BedrockReasoning(fields={})
    max_tokens = request.max_output_tokens + reasoning.extra_tokens
    params: dict[str, Any] = {
        "modelId": model,
        "messages": turns,
        "inferenceConfig": _inference(request.settings, max_tokens),
    }
    if system:
        params["system"] = system
    if tools:
        params["toolConfig"] = {"tools": tools}
    if reasoning.effort is not None:
        params["outputConfig"] = {"effort": reasoning.effort}
    extra = dict(request.settings.extra)
    fields = {**reasoning.fields, **extra.pop("additionalModelRequestFields", {})}
    if fields:
        params["additionalModelRequestFields"] = fields
    params.update(extra)
    return params
