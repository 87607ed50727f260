"""A loopback stand-in for OpenAI: refuses what the APIs refuse, streams what they stream.

:class:`OpenAIServer` checks every request against ``tests/models/openai_rules.py`` (each rule
cites its documentation) and answers a refused one as OpenAI does, without using up a
scripted turn. A Responses request that passes gets the next :class:`Turn` played as the
streaming reference lays it out (https://platform.openai.com/docs/api-reference/responses-streaming):
``response.created``, ``response.in_progress``, then for each output item
``response.output_item.added``, its content events and ``response.output_item.done``, then
``response.completed`` with the usage, or ``response.incomplete`` / ``response.failed`` / an
``error`` event. Reasoning items carry ``encrypted_content`` only when the request
``include``-d it, and summaries only when it asked for them (``reasoning.summary``), as the
reasoning guide says; the server remembers what it produced so a later request that alters
or drops it is refused. A scripted :class:`Reply` (a Chat Completions stream, a 429) is
played as it is.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any, Literal

from tests.models.openai_rules import Produced, check_chat, check_responses
from tests.models.sse_server import Reply, ScriptedServer, json_reply


@dataclass(frozen=True)
class Said:
    """An assistant message; ``annotations`` are its citations."""

    text: str
    annotations: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Thought:
    """A reasoning item, with the summary a request that asks for one gets."""

    summary: str


@dataclass(frozen=True)
class Called:
    """A function call; ``arguments`` is streamed in two pieces."""

    name: str
    arguments: str
    call_id: str


@dataclass(frozen=True)
class Hosted:
    """A hosted tool's item (``web_search_call`` …), as the API returns it."""

    item: dict[str, Any]


OutputItem = Said | Thought | Called | Hosted
#: ``cut`` drops the connection mid-body; ``unfinished`` ends the body with no final event
Ending = Literal["completed", "incomplete", "failed", "error", "cut", "unfinished"]


@dataclass(frozen=True)
class Turn:
    """One scripted response: its output items, then how it ends."""

    items: list[OutputItem]
    end: Ending = "completed"
    usage: dict[str, Any] | None = None
    #: the code and message of a ``failed`` or ``error`` ending
    error: tuple[str, str] = ("server_error", "The server had an error processing your request.")


def usage(
    input_tokens: int, output_tokens: int, *, cached: int = 0, reasoning: int = 0
) -> dict[str, Any]:
    """A Responses usage object: ``input_tokens`` include ``cached``, ``output_tokens``
    include ``reasoning`` (https://platform.openai.com/docs/api-reference/responses/object)."""
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": input_tokens + output_tokens,
    }


def rate_limited(retry_after: int) -> Reply:
    """A 429 as OpenAI sends it, with the wait in ``retry-after`` (and in milliseconds)
    (https://platform.openai.com/docs/guides/rate-limits, https://platform.openai.com/docs/guides/error-codes)."""
    reply = json_reply(
        429,
        {
            "error": {
                "message": "Rate limit reached for requests. Please try again later.",
                "type": "requests",
                "param": None,
                "code": "rate_limit_exceeded",
            }
        },
    )
    reply.headers.update(
        {"retry-after": str(retry_after), "retry-after-ms": str(retry_after * 1000)}
    )
    return reply


class OpenAIServer(ScriptedServer):
    """``with OpenAIServer() as server:``; ``server.script(Turn(...), reply, ...)``."""

    def __init__(self) -> None:
        super().__init__()
        self.turns: list[Turn | Reply] = []
        self.produced = Produced()
        self.refused: list[dict[str, Any]] = []
        self._turn_lock = threading.Lock()
        self._ids = 0

    def script(self, *turns: Turn | Reply) -> None:
        with self._turn_lock:
            self.turns.extend(turns)

    def next_reply(self) -> Reply:
        received = self.requests[-1]
        body = received.body or {}
        responses = received.path.endswith("/responses")
        refusal = check_responses(body, self.produced) if responses else check_chat(body)
        if refusal is not None:
            self.refused.append(refusal.body())
            return json_reply(refusal.status, refusal.body())
        with self._turn_lock:
            turn = self.turns.pop(0) if self.turns else None
        if turn is None:
            return super().next_reply()
        if isinstance(turn, Reply):
            return turn
        return self._play(turn, body)

    def _id(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}_{self._ids}"

    def _play(self, turn: Turn, body: dict[str, Any]) -> Reply:
        stream = _Stream(str(body.get("model", "")))
        stream.emit("response.created", response=stream.response("in_progress"))
        stream.emit("response.in_progress", response=stream.response("in_progress"))
        encrypted = "reasoning.encrypted_content" in (body.get("include") or [])
        summaries = bool((body.get("reasoning") or {}).get("summary"))
        last_reasoning: str | None = None
        for index, item in enumerate(turn.items):
            if isinstance(item, Thought):
                last_reasoning = self._id("rs")
                done = stream.reasoning(index, last_reasoning, item, summaries=summaries)
                if encrypted:
                    done["encrypted_content"] = f"gAAAA{last_reasoning}.{len(self.requests)}"
                    self.produced.reasoning[last_reasoning] = done["encrypted_content"]
            elif isinstance(item, Called):
                done = stream.call(index, self._id("fc"), item)
                if last_reasoning is not None:
                    self.produced.reasoned_calls[item.call_id] = last_reasoning
            elif isinstance(item, Said):
                done = stream.message(index, self._id("msg"), item)
            else:
                done = stream.hosted(index, item)
            stream.emit("response.output_item.done", output_index=index, item=done)
            stream.output.append(done)
        return stream.end(turn)


class _Stream:
    """The events of one response, numbered as the API numbers them."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.chunks: list[bytes | float] = []
        self.output: list[dict[str, Any]] = []
        self.sequence = 0

    def emit(self, kind: str, **fields: Any) -> None:
        event = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        self.chunks.append(f"event: {kind}\ndata: {json.dumps(event)}\n\n".encode())

    def response(self, status: str, **fields: Any) -> dict[str, Any]:
        return {
            "id": "resp_1",
            "object": "response",
            "created_at": 0,
            "model": self.model,
            "status": status,
            "output": list(self.output),
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "error": None,
            "incomplete_details": None,
            **fields,
        }

    def reasoning(
        self, index: int, item_id: str, item: Thought, *, summaries: bool
    ) -> dict[str, Any]:
        self.emit(
            "response.output_item.added",
            output_index=index,
            item={"type": "reasoning", "id": item_id, "summary": []},
        )
        summary = []
        if summaries:
            at = {"item_id": item_id, "output_index": index, "summary_index": 0}
            part = {"type": "summary_text", "text": item.summary}
            self.emit("response.reasoning_summary_part.added", **at, part={**part, "text": ""})
            self.emit("response.reasoning_summary_text.delta", **at, delta=item.summary)
            self.emit("response.reasoning_summary_text.done", **at, text=item.summary)
            self.emit("response.reasoning_summary_part.done", **at, part=part)
            summary = [part]
        return {"type": "reasoning", "id": item_id, "summary": summary}

    def call(self, index: int, item_id: str, item: Called) -> dict[str, Any]:
        done = {
            "type": "function_call",
            "id": item_id,
            "call_id": item.call_id,
            "name": item.name,
            "arguments": item.arguments,
            "status": "completed",
        }
        added = {**done, "arguments": "", "status": "in_progress"}
        self.emit("response.output_item.added", output_index=index, item=added)
        half = len(item.arguments) // 2
        at = {"item_id": item_id, "output_index": index}
        for piece in (item.arguments[:half], item.arguments[half:]):
            self.emit("response.function_call_arguments.delta", **at, delta=piece)
        self.emit("response.function_call_arguments.done", **at, arguments=item.arguments)
        return done

    def message(self, index: int, item_id: str, item: Said) -> dict[str, Any]:
        head = {"type": "message", "id": item_id, "role": "assistant"}
        self.emit(
            "response.output_item.added",
            output_index=index,
            item={**head, "status": "in_progress", "content": []},
        )
        at = {"item_id": item_id, "output_index": index, "content_index": 0}
        part = {"type": "output_text", "text": item.text, "annotations": item.annotations}
        self.emit("response.content_part.added", **at, part={**part, "text": "", "annotations": []})
        half = len(item.text) // 2
        for piece in (item.text[:half], item.text[half:]):
            self.emit("response.output_text.delta", **at, delta=piece, logprobs=[])
        self.emit("response.output_text.done", **at, text=item.text, logprobs=[])
        self.emit("response.content_part.done", **at, part=part)
        return {**head, "status": "completed", "content": [part]}

    def hosted(self, index: int, item: Hosted) -> dict[str, Any]:
        added = {**item.item, "status": "in_progress"}
        self.emit("response.output_item.added", output_index=index, item=added)
        return item.item

    def end(self, turn: Turn) -> Reply:
        counts = turn.usage or usage(10, 5)
        match turn.end:
            case "completed":
                self.emit("response.completed", response=self.response("completed", usage=counts))
            case "incomplete":
                details = {"reason": "max_output_tokens"}
                response = self.response("incomplete", usage=counts, incomplete_details=details)
                self.emit("response.incomplete", response=response)
            case "failed":
                error = {"code": turn.error[0], "message": turn.error[1]}
                self.emit("response.failed", response=self.response("failed", error=error))
            case "error":
                self.emit("error", code=turn.error[0], message=turn.error[1], param=None)
            case "cut" | "unfinished":
                pass
        return Reply(
            headers={"Content-Type": "text/event-stream"}, chunks=self.chunks, cut=turn.end == "cut"
        )
