"""A loopback stand-in for the Messages API that keeps Anthropic's documented rules.

It answers ``POST /v1/messages`` as the API does: streamed responses built from scripted
content blocks, signed the way only it can check, prompt-cache accounting from the
breakpoints a request carries, and 400s for the requests the API rejects. Each rule names
the documentation it comes from:

* **Thinking blocks go back verbatim** (Anthropic, "Building with extended thinking",
  "Preserving thinking blocks" and "Thinking encryption",
  https://platform.claude.com/docs/en/build-with-claude/extended-thinking): a thinking block's
  ``signature`` must be the one issued for its text, a ``redacted_thinking`` block's ``data``
  the one issued; with thinking on, an assistant turn whose tool calls the request answers
  must start with a thinking block ("Expected `thinking` or `redacted_thinking`, but found
  `tool_use`").
* **Adaptive or budget** ("Adaptive thinking",
  https://platform.claude.com/docs/en/build-with-claude/adaptive-thinking): Claude Opus 4.7
  and the Mythos models take only ``adaptive`` and answer ``enabled`` with a 400; models
  before Opus 4.6 / Sonnet 4.6 take only ``enabled``; ``budget_tokens`` is at least 1,024 and
  below ``max_tokens`` ("Extended thinking", "Max tokens and context window size").
* **Tool results follow their calls** ("How to implement tool use", "Handling tool use and
  tool result content blocks"): every ``tool_use`` of an assistant turn is answered by a
  ``tool_result`` in the next user turn, and a result answers a call of that turn.
* **Server tool blocks and citations go back as they came** ("Server tools",
  https://platform.claude.com/docs/en/agents-and-tools/tool-use/server-tools; "Web search
  tool", encrypted content and ``encrypted_index``): blocks it issued must return unchanged.
* **Prompt caching** ("Prompt caching",
  https://platform.claude.com/docs/en/build-with-claude/prompt-caching): at most 4 blocks
  with ``cache_control``, none on a thinking block; the prefix (tools, system, messages in
  that order) up to a breakpoint is written when it reaches the model's minimum cacheable
  length, and read when a later request's breakpoint, or a block up to 20 before it, ends a
  prefix written within the TTL (5 minutes, or 1 hour; a read refreshes it). Usage reports
  ``cache_creation_input_tokens`` and ``cache_read_input_tokens`` only for requests that
  carry breakpoints; ``input_tokens`` is what is left. Tokens are estimated as 4 characters
  of the block's JSON each.
* **Structured outputs** ("Structured outputs",
  https://platform.claude.com/docs/en/build-with-claude/structured-outputs):
  ``output_config.format`` only on models that have them.
* **Failures** ("Errors", https://platform.claude.com/docs/en/api/errors): 529
  ``overloaded_error``, 429 ``rate_limit_error`` with ``retry-after``, and an ``error`` event
  inside a 200 stream.

Model names it knows are below; another name (``claude-test``) takes either kind of
thinking, has structured outputs and a minimum cacheable length of 1,024 tokens.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from tests.models.anthropic_script import start, text_block
from tests.models.sse_server import Received, Reply, ScriptedServer, anthropic_sse, json_reply

ADAPTIVE_ONLY = {"claude-opus-4-7", "claude-mythos-preview"}
BUDGET_ONLY = {"claude-sonnet-4-5", "claude-opus-4-5", "claude-haiku-4-5", "claude-3-7-sonnet"}
NO_STRUCTURED_OUTPUT = {"claude-3-7-sonnet", "claude-opus-4-1"}
MIN_CACHEABLE = {"claude-opus-4-5": 4096, "claude-haiku-4-5": 4096, "claude-opus-4-7": 2048}
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
LOOKBACK_BLOCKS = 20
MAX_BREAKPOINTS = 4


@dataclass
class Turn:
    """One scripted response: content blocks as the API returns them (thinking without its
    signature and redacted thinking without data: the server signs them) and a stop reason."""

    blocks: list[dict[str, Any]]
    stop_reason: str
    output_tokens: int = 5


Script = Turn | Reply | Callable[[dict[str, Any]], "Turn | Reply"]


class Rejected(Exception):
    pass


def tokens(value: Any) -> int:
    text = json.dumps(_without_cache_control(value), sort_keys=True)
    return max(1, (len(text) + 3) // 4)


def _without_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_cache_control(v) for v in value]
    return value


def overloaded() -> Reply:
    return json_reply(
        529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    )


def rate_limited(retry_after: int) -> Reply:
    reply = json_reply(
        429, {"type": "error", "error": {"type": "rate_limit_error", "message": "Rate limited"}}
    )
    reply.headers["retry-after"] = str(retry_after)
    return reply


@dataclass
class _Unit:
    """One block of the prompt prefix, in the order the API caches it."""

    tokens: int
    chain: str
    breakpoint: str | None  # the TTL of its cache_control


class AnthropicServer(ScriptedServer):
    """``with AnthropicServer() as server: server.script(Turn(...), ...)``."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.scripts: list[Script] = []
        self.clock = clock
        self._secret = os.urandom(16)
        self._issued: dict[str, dict[str, Any]] = {}
        self._cache: dict[str, tuple[float, str]] = {}  # prefix chain -> (expiry, ttl)
        #: the usage each answered request reported
        self.usages: list[dict[str, int]] = []

    def __enter__(self) -> AnthropicServer:
        super().__enter__()
        return self

    def script(self, *scripts: Script) -> None:
        self.scripts.extend(scripts)

    def reply_to(self, received: Received) -> Reply:
        body: dict[str, Any] = received.body
        try:
            self._check(body)
        except Rejected as error:
            return json_reply(
                400,
                {
                    "type": "error",
                    "error": {"type": "invalid_request_error", "message": str(error)},
                },
            )
        answer = self.play(self.scripts, body)
        if isinstance(answer, Reply):
            return answer
        usage = self._account(body)
        self.usages.append(usage)
        return anthropic_sse(self._events(answer, usage))

    # --- the rules ----------------------------------------------------------------------

    def _check(self, body: dict[str, Any]) -> None:
        model = str(body["model"])
        self._check_thinking(model, body)
        turns: list[dict[str, Any]] = body["messages"]
        for n, turn in enumerate(turns):
            expected = "user" if n % 2 == 0 else "assistant"
            if turn["role"] != expected:
                raise Rejected(f"messages.{n}: roles must alternate, starting with user")
            for k, block in enumerate(_content(turn)):
                self._check_block(f"messages.{n}.content.{k}", block)
        self._check_tool_pairs(turns)
        if body.get("thinking", {}).get("type") in ("enabled", "adaptive"):
            self._check_thinking_first(turns)
        marked = [b for b in _blocks(body) if "cache_control" in b]
        if len(marked) > MAX_BREAKPOINTS:
            raise Rejected(
                f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
                f"Found {len(marked)}."
            )
        if "format" in body.get("output_config", {}) and model in NO_STRUCTURED_OUTPUT:
            raise Rejected(f"output_config.format: structured outputs are not supported on {model}")

    def _check_thinking(self, model: str, body: dict[str, Any]) -> None:
        thinking = body.get("thinking")
        if thinking is None:
            return
        if thinking["type"] == "enabled":
            if model in ADAPTIVE_ONLY:
                raise Rejected(
                    f'thinking.type: "enabled" is not supported for {model}; '
                    'use thinking.type: "adaptive" with output_config.effort'
                )
            budget = thinking["budget_tokens"]
            if budget < 1024 or budget >= body["max_tokens"]:
                raise Rejected("thinking.budget_tokens: must be >= 1024 and less than max_tokens")
        elif thinking["type"] == "adaptive" and model in BUDGET_ONLY:
            raise Rejected(f'thinking.type: "adaptive" is not supported for {model}')

    def _check_block(self, where: str, block: dict[str, Any]) -> None:
        kind = block["type"]
        if kind == "text" and not block["text"]:
            raise Rejected(f"{where}: text content blocks must be non-empty")
        if kind in ("thinking", "redacted_thinking") and "cache_control" in block:
            raise Rejected(f"{where}: thinking blocks cannot be marked with cache_control")
        if kind == "thinking" and block.get("signature") != self._sign(block["thinking"]):
            raise Rejected(f"{where}: Invalid `signature` in `thinking` block")
        if kind == "redacted_thinking" and block.get("data") not in self._issued:
            raise Rejected(f"{where}: Invalid `data` in `redacted_thinking` block")
        key = _issued_key(block)
        if key is not None and _without_cache_control(block) != self._issued.get(key):
            raise Rejected(f"{where}: {kind} block does not match the one the API returned")

    @staticmethod
    def _check_tool_pairs(turns: list[dict[str, Any]]) -> None:
        for n, turn in enumerate(turns):
            if turn["role"] != "assistant":
                continue
            calls = {b["id"] for b in _content(turn) if b["type"] == "tool_use"}
            if n + 1 >= len(turns):
                continue
            answered = {
                b["tool_use_id"] for b in _content(turns[n + 1]) if b["type"] == "tool_result"
            }
            if calls - answered:
                raise Rejected(
                    "messages.{}: `tool_use` ids were found without `tool_result` blocks "
                    "immediately after: {}".format(n, ", ".join(sorted(calls - answered)))
                )
            if answered - calls:
                raise Rejected(
                    f"messages.{n + 1}: unexpected `tool_use_id` found in `tool_result` blocks"
                )

    @staticmethod
    def _check_thinking_first(turns: list[dict[str, Any]]) -> None:
        if len(turns) < 2 or turns[-1]["role"] != "user":
            return
        if not any(b["type"] == "tool_result" for b in _content(turns[-1])):
            return
        first = _content(turns[-2])[0]["type"]
        if first not in ("thinking", "redacted_thinking"):
            raise Rejected(
                f"messages.{len(turns) - 2}.content.0.type: Expected `thinking` or "
                f"`redacted_thinking`, but found `{first}`. When `thinking` is enabled, a final "
                "`assistant` message must start with a thinking block."
            )

    # --- prompt caching -----------------------------------------------------------------

    def _units(self, body: dict[str, Any]) -> list[_Unit]:
        units: list[_Unit] = []
        chain = hashlib.sha256(str(body["model"]).encode())
        for block in _blocks(body):
            chain.update(json.dumps(_without_cache_control(block), sort_keys=True).encode())
            control = block.get("cache_control")
            ttl = control.get("ttl", "5m") if isinstance(control, dict) else None
            units.append(_Unit(tokens(block), chain.hexdigest(), ttl))
        return units

    def _account(self, body: dict[str, Any]) -> dict[str, int]:
        units = self._units(body)
        total = sum(u.tokens for u in units)
        marks = [i for i, u in enumerate(units) if u.breakpoint is not None]
        if not marks:
            return {"input_tokens": total}
        now = self.clock()
        read_end = -1
        for mark in marks:
            for i in range(mark, max(-1, mark - LOOKBACK_BLOCKS), -1):
                entry = self._cache.get(units[i].chain)
                if entry is not None and entry[0] > now:
                    read_end = max(read_end, i)
                    break
        if read_end >= 0:
            ttl = self._cache[units[read_end].chain][1]
            self._cache[units[read_end].chain] = (now + TTL_SECONDS[ttl], ttl)
        minimum = MIN_CACHEABLE.get(str(body["model"]), 1024)
        written_end = read_end
        for mark in marks:
            prefix = sum(u.tokens for u in units[: mark + 1])
            ttl = units[mark].breakpoint or "5m"
            if prefix >= minimum and mark > read_end:
                self._cache[units[mark].chain] = (now + TTL_SECONDS[ttl], ttl)
                written_end = max(written_end, mark)
        read = sum(u.tokens for u in units[: read_end + 1])
        written = sum(u.tokens for u in units[read_end + 1 : written_end + 1])
        return {
            "input_tokens": total - read - written,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
        }

    # --- responses ----------------------------------------------------------------------

    def _sign(self, thinking: str) -> str:
        return hmac.new(self._secret, thinking.encode(), "sha256").hexdigest()

    def _events(self, turn: Turn, usage: dict[str, int]) -> Iterator[dict[str, Any]]:
        message: dict[str, Any] = {
            "id": f"msg_{len(self.usages)}",
            "type": "message",
            "role": "assistant",
            "model": "claude",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {**usage, "output_tokens": 1},
        }
        yield {"type": "message_start", "message": message}
        for index, block in enumerate(turn.blocks):
            yield from self._block_events(index, block)
        yield {
            "type": "message_delta",
            "delta": {"stop_reason": turn.stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": turn.output_tokens},
        }
        yield {"type": "message_stop"}

    def _block_events(self, index: int, block: dict[str, Any]) -> Iterator[dict[str, Any]]:
        kind = block["type"]

        def delta(d: dict[str, Any]) -> dict[str, Any]:
            return {"type": "content_block_delta", "index": index, "delta": d}

        def start(b: dict[str, Any]) -> dict[str, Any]:
            return {"type": "content_block_start", "index": index, "content_block": b}

        if kind == "thinking":
            yield start({"type": "thinking", "thinking": "", "signature": ""})
            yield delta({"type": "thinking_delta", "thinking": block["thinking"]})
            yield delta({"type": "signature_delta", "signature": self._sign(block["thinking"])})
        elif kind == "redacted_thinking":
            data = "redacted-" + os.urandom(8).hex()
            self._issued[data] = {"type": "redacted_thinking", "data": data}
            yield start({"type": "redacted_thinking", "data": data})
        elif kind == "text":
            yield start({"type": "text", "text": ""})
            yield delta({"type": "text_delta", "text": block["text"]})
            for citation in block.get("citations") or []:
                yield delta({"type": "citations_delta", "citation": citation})
        elif kind in ("tool_use", "server_tool_use"):
            yield start({**block, "input": {}})
            yield delta({"type": "input_json_delta", "partial_json": json.dumps(block["input"])})
        else:
            yield start(block)
        key = _issued_key(block)
        if key is not None:
            self._issued[key] = block
        yield {"type": "content_block_stop", "index": index}


def _content(turn: dict[str, Any]) -> list[dict[str, Any]]:
    content = turn["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _issued_key(block: dict[str, Any]) -> str | None:
    """Blocks the API returns opaque and checks when they come back, by their id."""
    kind = block["type"]
    if kind == "server_tool_use":
        return str(block["id"])
    if kind.endswith("_tool_result") and kind != "tool_result":
        return f"result:{block['tool_use_id']}"
    if kind == "text" and block.get("citations"):
        return f"cited:{block['text']}"
    return None


def _blocks(body: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The request's blocks in the order the API caches them: tools, system, messages."""
    yield from body.get("tools", [])
    system = body.get("system", [])
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    yield from system
    for turn in body["messages"]:
        yield from _content(turn)


def error_mid_stream(*texts: str, error_type: str = "overloaded_error") -> Reply:
    """A 200 stream that sends a text block of ``texts``, then an ``error`` event."""
    events = [start(), *text_block(0, *texts)]
    events.append({"type": "error", "error": {"type": error_type, "message": "Overloaded"}})
    return anthropic_sse(events)


__all__ = [
    "AnthropicServer",
    "Turn",
    "error_mid_stream",
    "overloaded",
    "rate_limited",
    "tokens",
]
