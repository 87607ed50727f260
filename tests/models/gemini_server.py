"""A loopback stand-in for the Gemini API that keeps its documented rules.

It answers ``POST …/models/<model>:streamGenerateContent?alt=sse`` (the Gemini API's
``/v1…/models/`` and Vertex AI's ``/v1beta1/publishers/google/models/``) as the API does:
streamed ``GenerateContentResponse`` chunks built from scripted parts, thought signatures only
it can check, implicit-cache accounting, and 400s for the requests the API rejects. Each rule
names the documentation it comes from:

* **Thought signatures** ("Thought signatures",
  https://ai.google.dev/gemini-api/docs/thought-signatures): a thinking model's response
  carries a signature on its first function call part, or on its last part when it calls no
  function; a signature must come back on the part it was issued for, unchanged; for a
  Gemini 3 model, each model content of the current turn (since the last user content that
  is not function responses) that calls functions must carry a signature on its first
  call ("Function call is missing a thought_signature in functionCall parts"), and the
  documented placeholder ``skip_thought_signature_validator`` is accepted there. Signatures
  are bytes: proto3's JSON mapping accepts standard and URL-safe base64 alike ("JSON
  Mapping", https://protobuf.dev/programming-guides/json/), so they are compared decoded.
* **Function calling** ("Function calling",
  https://ai.google.dev/gemini-api/docs/function-calling): a model content that calls
  functions follows a user content or function responses, and the next content answers
  every call, in order, by name (and by id when the call had one).
* **Roles** (``Content.role``, https://ai.google.dev/api/caching#Content): ``user`` and
  ``model`` alternate, starting with ``user``.
* **Thinking** ("Gemini thinking", https://ai.google.dev/gemini-api/docs/thinking):
  ``thinkingLevel`` only on Gemini 3 (Pro: ``low``/``high``), ``thinkingBudget`` within the
  2.5 model's range (Pro cannot turn thinking off), never both.
* **Structured output** ("Structured output",
  https://ai.google.dev/gemini-api/docs/structured-output): ``responseJsonSchema`` together
  with function declarations only on Gemini 3.
* **Context caching** ("Context caching", https://ai.google.dev/gemini-api/docs/caching):
  implicit caching reports ``cachedContentTokenCount`` (part of ``promptTokenCount``) for a
  request that repeats a prefix of an earlier one of at least 1,024 tokens; a request with
  ``cachedContent`` names a cache that exists (403 otherwise), may not set
  ``systemInstruction`` or ``tools``, and reads all the cache's tokens.
* **Failures** ("Troubleshooting", https://ai.google.dev/gemini-api/docs/troubleshooting):
  429 ``RESOURCE_EXHAUSTED`` with a ``google.rpc.RetryInfo``, 503 ``UNAVAILABLE``, a prompt
  blocked by ``promptFeedback.blockReason``, and ``finishReason: SAFETY``.

Tokens are estimated as 4 characters of JSON each.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from eve.execution.checkpoints import RanAll, StepPart
from eve.execution.response import ModelResponse, ResponseParts
from eve.messages import (
    AssistantMessage,
    AssistantPart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    tool_result,
    user_message,
)
from eve.models.base import ModelClient, ModelRequest
from eve.models.events import Done, ModelEvent, PartCompleted, TokenUsage, ToolCallEnd
from tests.models.sse_server import Received, Reply, ScriptedServer, json_reply

PLACEHOLDER = "skip_thought_signature_validator"
MIN_IMPLICIT_CACHE = 1024
_PATH = re.compile(r"/models/([^/:]+):streamGenerateContent")
# Struct values (a call's args, a response, a JSON Schema) keep their keys as given
_STRUCT_FIELDS = frozenset(
    {"args", "response", "responseJsonSchema", "parametersJsonSchema", "responseSchema"}
)
_RANGES = {"pro": (128, 32768), "flash": (0, 24576), "flash-lite": (0, 24576)}


@dataclass
class Turn:
    """One scripted response: parts as the API returns them (the server signs them), why it
    finished, and how many tokens it produced."""

    parts: list[dict[str, Any]]
    finish: str = "STOP"
    output_tokens: int = 5
    thoughts_tokens: int = 0
    #: what else the candidate carries (``safetyRatings``)
    extra: dict[str, Any] = field(default_factory=dict)


Script = Turn | Reply | Callable[[dict[str, Any]], "Turn | Reply"]


class Rejected(Exception):
    def __init__(self, message: str, *, code: int = 400, status: str = "INVALID_ARGUMENT"):
        super().__init__(message)
        self.code = code
        self.status = status


def recorded_parts(events: list[ModelEvent]) -> list[AssistantPart]:
    """The parts the loop records of a response's events (as ``stream_response`` builds them)."""
    built = ResponseParts()
    for event in events:
        if isinstance(event, PartCompleted):
            built.add_part(event)
        elif isinstance(event, ToolCallEnd):
            built.add_call(event)
    return built.parts()


def replayed_message(events: list[ModelEvent]) -> tuple[AssistantMessage, AssistantMessage]:
    """The assistant message a response's events record, and the same message once its step
    record has been through JSON, as a durable step replayed after a crash reads it."""
    response = ModelResponse(
        parts=recorded_parts(events), finish_reason="tool_use", usage=TokenUsage()
    )
    replayed = msgspec.json.decode(msgspec.json.encode(RanAll(response=response)), type=StepPart)
    assert replayed.response is not None
    return response.message(), replayed.response.message()


def anthropic_tool_loop() -> list[Message]:
    """A weather call and its result as Anthropic recorded them, signed reasoning first: the
    history another provider is sent after a change of model."""
    return [
        user_message("weather?"),
        AssistantMessage(
            parts=[
                ReasoningPart(provider="anthropic", text="plan", signature="sig-ant"),
                ToolCallPart(id="toolu_1", name="weather", input={"city": "Oslo"}),
            ]
        ),
        tool_result("toolu_1", "sunny", name="weather"),
    ]


async def cold_then_warm(model: ModelClient) -> tuple[Done, Done]:
    """Two steps with a long system prompt (a prefix worth caching), the second repeating the
    first: the ``Done`` of each (the server must have two text turns scripted)."""
    system = "You answer questions about the weather. " * 200
    history: list[Message] = [user_message("a")]
    first = [e async for e in model.stream(ModelRequest(system=system, messages=history))]
    history += [AssistantMessage(parts=[TextPart(text="Sunny.")]), user_message("and now?")]
    second = [e async for e in model.stream(ModelRequest(system=system, messages=history))]
    cold, warm = first[-1], second[-1]
    assert isinstance(cold, Done) and isinstance(warm, Done)
    return cold, warm


def tokens(value: Any) -> int:
    return max(1, (len(json.dumps(value, sort_keys=True)) + 3) // 4)


def error_reply(code: int, status: str, message: str, details: list[Any] | None = None) -> Reply:
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = details
    return json_reply(code, {"error": error})


def quota_exhausted(retry_seconds: float) -> Reply:
    """429 with the ``RetryInfo`` detail the API sends ("37s")."""
    retry = {
        "@type": "type.googleapis.com/google.rpc.RetryInfo",
        "retryDelay": f"{retry_seconds:g}s",
    }
    return error_reply(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota.", [retry])


def unavailable() -> Reply:
    return error_reply(503, "UNAVAILABLE", "The model is overloaded. Please try again later.")


def prompt_blocked() -> Reply:
    chunk = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 3}}
    return sse([chunk])


def sse(chunks: list[dict[str, Any]], *, cut: bool = False) -> Reply:
    pieces: list[bytes | float] = [f"data: {json.dumps(c)}\r\n\r\n".encode() for c in chunks]
    return Reply(headers={"Content-Type": "text/event-stream"}, chunks=pieces, cut=cut)


def proto_json(value: Any) -> Any:
    """``value`` with every field name in lowerCamelCase: proto3's JSON parsers accept the
    original snake_case names too ("JSON Mapping"), and the SDK sends some of each."""
    if isinstance(value, list):
        return [proto_json(v) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, inner in value.items():
        camel = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), key)
        out[camel] = inner if camel in _STRUCT_FIELDS else proto_json(inner)
    return out


def _decoded(signature: str) -> bytes:
    padded = signature + "=" * (-len(signature) % 4)
    try:
        return base64.urlsafe_b64decode(padded.replace("+", "-").replace("/", "_"))
    except (binascii.Error, ValueError) as error:
        raise Rejected(f"thoughtSignature is not base64: {signature!r}") from error


def _model(path: str) -> str:
    found = _PATH.search(path)
    return found.group(1) if found else ""


def _family(model: str) -> tuple[tuple[int, int], str]:
    found = re.search(r"gemini-(\d+)(?:\.(\d+))?-(pro|flash-lite|flash)", model)
    if found is None:
        return (3, 0), "flash"  # a test name: the newest kind
    return (int(found.group(1)), int(found.group(2) or 0)), found.group(3)


class GeminiServer(ScriptedServer):
    """``with GeminiServer(key) as api: api.script(Turn(...), ...)``; ``api.url`` is the
    ``GOOGLE_GEMINI_BASE_URL`` (or ``GOOGLE_VERTEX_BASE_URL``)."""

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key
        self.scripts: list[Script] = []
        self._secret = os.urandom(16)
        self._prefixes: set[str] = set()
        #: explicit caches a test made (``cachedContents/<id>``) → the tokens each holds
        self.caches: dict[str, int] = {}
        #: each request's body with every field name in lowerCamelCase
        self.bodies: list[dict[str, Any]] = []
        #: the ``usageMetadata`` each answered request reported
        self.usages: list[dict[str, int]] = []

    def __enter__(self) -> GeminiServer:
        super().__enter__()
        return self

    def script(self, *scripts: Script) -> None:
        self.scripts.extend(scripts)

    def reply_to(self, received: Received) -> Reply:
        if received.headers.get("x-goog-api-key") != self.key:
            return error_reply(
                403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers"
            )
        model = _model(received.path)
        if not model or "alt=sse" not in received.path:
            return error_reply(404, "NOT_FOUND", f"no such method: {received.path}")
        body: dict[str, Any] = proto_json(received.body)
        self.bodies.append(body)
        try:
            self._check(model, body)
        except Rejected as error:
            return error_reply(error.code, error.status, str(error))
        answer = self.play(self.scripts, body)
        if isinstance(answer, Reply):
            return answer
        return sse(self._chunks(model, body, answer))

    # --- the rules ----------------------------------------------------------------------

    def _check(self, model: str, body: dict[str, Any]) -> None:
        contents: list[dict[str, Any]] = body.get("contents") or []
        config: dict[str, Any] = body.get("generationConfig") or {}
        if cache := body.get("cachedContent"):
            if "systemInstruction" in body or "tools" in body:
                raise Rejected(
                    "CachedContent can not be used with GenerateContent request setting "
                    "system_instruction, tools or tool_config."
                )
            if cache not in self.caches:
                raise Rejected(
                    "CachedContent not found (or permission denied)",
                    code=403,
                    status="PERMISSION_DENIED",
                )
        self._check_thinking(model, config.get("thinkingConfig"))
        declares = any("functionDeclarations" in t for t in body.get("tools") or [])
        if "responseJsonSchema" in config and declares and _family(model)[0] < (3, 0):
            raise Rejected(
                "Function calling with a response mime type: 'application/json' is unsupported"
            )
        for n, content in enumerate(contents):
            expected = "user" if n % 2 == 0 else "model"
            if content.get("role") != expected:
                raise Rejected(
                    "Please ensure that multiturn requests alternate between user and model."
                )
            for part in content.get("parts") or []:
                self._check_signature(part)
            if expected == "model":
                self._check_calls(contents, n)
        if _family(model)[0] >= (3, 0):
            self._check_current_turn(contents)

    def _check_thinking(self, model: str, thinking: dict[str, Any] | None) -> None:
        if not thinking:
            return
        version, family = _family(model)
        if "thinkingLevel" in thinking and "thinkingBudget" in thinking:
            raise Rejected("thinking_budget and thinking_level are not supported together.")
        if "thinkingLevel" in thinking:
            levels = ("low", "high") if family == "pro" else ("minimal", "low", "medium", "high")
            if version < (3, 0) or thinking["thinkingLevel"].lower() not in levels:
                raise Rejected(f"Thinking level {thinking['thinkingLevel']} is not supported.")
        if "thinkingBudget" in thinking and version < (3, 0):
            low, high = _RANGES[family]
            budget = thinking["thinkingBudget"]
            if budget != -1 and not low <= budget <= high:
                raise Rejected(
                    f"The thinking budget {budget} is invalid. Please choose a value "
                    f"between {low} and {high}."
                )

    def _check_signature(self, part: dict[str, Any]) -> None:
        signature = part.get("thoughtSignature")
        if signature is None or (signature == PLACEHOLDER and "functionCall" in part):
            return
        if not hmac.compare_digest(_decoded(signature), self._sign(part)):
            raise Rejected("Corrupted thought signature.")

    def _check_calls(self, contents: list[dict[str, Any]], n: int) -> None:
        calls = [p["functionCall"] for p in contents[n]["parts"] if "functionCall" in p]
        if not calls:
            return
        before = contents[n - 1]["parts"]
        if not any("text" in p or "inlineData" in p or "fileData" in p for p in before) and not any(
            "functionResponse" in p for p in before
        ):
            raise Rejected(
                "Please ensure that function call turn comes immediately after a user turn "
                "or after a function response turn."
            )
        if n + 1 >= len(contents):
            return
        answers = [
            p["functionResponse"] for p in contents[n + 1]["parts"] if "functionResponse" in p
        ]
        if len(answers) != len(calls):
            raise Rejected(
                "Please ensure that the number of function response parts is equal to the "
                "number of function call parts of the function call turn."
            )
        for call, answer in zip(calls, answers, strict=True):
            if answer.get("name") != call.get("name") or answer.get("id") != call.get("id"):
                raise Rejected(
                    f"function response {answer.get('name')!r} does not answer the function "
                    f"call {call.get('name')!r} in its position"
                )

    def _check_current_turn(self, contents: list[dict[str, Any]]) -> None:
        start = 0
        for n, content in enumerate(contents):
            parts = content.get("parts") or []
            if content["role"] == "user" and not all("functionResponse" in p for p in parts):
                start = n
        for content in contents[start:]:
            calls = [p for p in content.get("parts") or [] if "functionCall" in p]
            if calls and "thoughtSignature" not in calls[0]:
                name = calls[0]["functionCall"].get("name")
                raise Rejected(
                    "Function call is missing a thought_signature in functionCall parts. This "
                    "is required for tools to work correctly, and missing thought_signature may "
                    f"lead to degraded model performance. Additional data, function call "
                    f"`default_api:{name}`. Please refer to "
                    "https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
                )

    # --- the response -------------------------------------------------------------------

    def _sign(self, part: dict[str, Any]) -> bytes:
        unsigned = {k: v for k, v in part.items() if k != "thoughtSignature"}
        text = json.dumps(unsigned, sort_keys=True).encode()
        return hmac.new(self._secret, text, hashlib.sha256).digest()

    def _signed(self, body: dict[str, Any], turn: Turn) -> list[dict[str, Any]]:
        parts = [dict(p) for p in turn.parts]
        thinking = (body.get("generationConfig") or {}).get("thinkingConfig") or {}
        if not parts or thinking.get("thinkingBudget") == 0:
            return parts
        calls = [p for p in parts if "functionCall" in p]
        target = calls[0] if calls else parts[-1]
        target["thoughtSignature"] = base64.b64encode(self._sign(target)).decode()
        for part in parts:
            if part.get("thought"):
                part["thoughtSignature"] = base64.b64encode(self._sign(part)).decode()
        return parts

    def _usage(self, body: dict[str, Any], turn: Turn) -> dict[str, int]:
        head = {k: body.get(k) for k in ("systemInstruction", "tools")}
        contents = body.get("contents") or []
        prefixes = [
            json.dumps([head, contents[:k]], sort_keys=True) for k in range(len(contents) + 1)
        ]
        cached = 0
        for k in range(len(contents), 0, -1):
            if prefixes[k] in self._prefixes and tokens([head, contents[:k]]) >= MIN_IMPLICIT_CACHE:
                cached = tokens([head, contents[:k]])
                break
        self._prefixes.update(prefixes)
        prompt = tokens([head, contents])
        if explicit := self.caches.get(body.get("cachedContent", "")):
            # the cache's tokens are part of the prompt, all of them read from the cache
            prompt, cached = prompt + explicit, explicit
        usage = {
            "promptTokenCount": prompt,
            "candidatesTokenCount": turn.output_tokens,
            "totalTokenCount": prompt + turn.output_tokens + turn.thoughts_tokens,
        }
        if cached:
            usage["cachedContentTokenCount"] = cached
        if turn.thoughts_tokens:
            usage["thoughtsTokenCount"] = turn.thoughts_tokens
        return usage

    def _chunks(self, model: str, body: dict[str, Any], turn: Turn) -> list[dict[str, Any]]:
        """One chunk per part, a text split in two with its signature on the second piece."""
        pieces: list[dict[str, Any]] = []
        for part in self._signed(body, turn):
            text = part.get("text")
            if isinstance(text, str) and len(text) > 1:
                half = len(text) // 2
                first = {k: v for k, v in part.items() if k != "thoughtSignature"}
                pieces.append({**first, "text": text[:half]})
                pieces.append({**part, "text": text[half:]})
            else:
                pieces.append(part)
        usage = self._usage(body, turn)
        self.usages.append(usage)
        chunks: list[dict[str, Any]] = [
            {
                "candidates": [{"content": {"role": "model", "parts": [p]}, "index": 0}],
                "modelVersion": model,
            }
            for p in pieces
        ]
        last = {"content": {"role": "model", "parts": []}, "index": 0, "finishReason": turn.finish}
        chunks.append(
            {"candidates": [{**last, **turn.extra}], "usageMetadata": usage, "modelVersion": model}
        )
        return chunks
