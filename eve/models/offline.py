"""Models that need no network: ``offline/test`` and ``offline/script:<path>``.

``offline/test`` calls each available tool once with arguments synthesized from its schema,
then summarizes the results (for an agent with ``output_schema``, in a call of the
final-answer tool with a sample of the schema); ``offline/script`` replays a JSON list of
responses, the n-th model request of a session (counted by the assistant messages already
in its history) getting the n-th response, so a resumed session continues where it stopped.

Asked for a compaction summary (``ModelRequest.purpose``), both write a deterministic one
(``offline_summary``), and the script model does not count it as a scripted response.

Both acknowledge what they cannot look at: a user message's images and documents
("(received 1 image: image/png, 68 bytes)", on the turn's first response), and
``offline/test`` the media a tool returned, so attachments are testable without a key.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec

from eve.errors import OfflineScriptError
from eve.messages import (
    AssistantMessage,
    DocumentPart,
    ImagePart,
    MediaPart,
    Message,
    ToolResultMessage,
    UserMessage,
)
from eve.models.base import FINAL_ANSWER_TOOL, ModelRequest
from eve.models.events import (
    Done,
    ModelEvent,
    TextDelta,
    TokenUsage,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from eve.models.schema_sample import sample


class ScriptedCall(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: str
    input: dict[str, Any] = {}


class ScriptedResponse(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    text: str = ""
    tool_calls: list[ScriptedCall] = []


def _words(text: str) -> list[str]:
    parts = text.split(" ")
    return [p + (" " if i < len(parts) - 1 else "") for i, p in enumerate(parts)]


def _usage(request: ModelRequest, text: str) -> TokenUsage:
    prompt = len(request.system) + sum(len(msgspec.json.encode(m)) for m in request.messages)
    return TokenUsage(input_tokens=prompt // 4 + 1, output_tokens=len(text) // 4 + 1)


async def respond(
    request: ModelRequest, text: str, calls: list[tuple[str, str, dict[str, Any]]]
) -> AsyncIterator[ModelEvent]:
    """Stream a response the way a provider would: text in word deltas, then each call."""
    for word in _words(text) if text else []:
        yield TextDelta(text=word)
    for call_id, name, data in calls:
        yield ToolCallStart(id=call_id, name=name)
        yield ToolCallDelta(id=call_id, json_delta=json.dumps(data))
        yield ToolCallEnd(id=call_id, name=name, input=data)
    yield Done(stop_reason="tool_use" if calls else "end_turn", usage=_usage(request, text))


def _described(part: MediaPart) -> str:
    where = f"{len(part.data)} bytes" if part.data is not None else f"at {part.url}"
    name = f"{part.name}, " if isinstance(part, DocumentPart) and part.name else ""
    return f"{name}{part.media_type}, {where}"


def _counted(media: list[MediaPart]) -> str:
    counts = []
    for kind in ("image", "document"):
        n = sum(m.kind == kind for m in media)
        if n:
            counts.append(f"{n} {kind}{'s' if n > 1 else ''}")
    return " and ".join(counts)


def acknowledgement(media: list[MediaPart]) -> str:
    """``(received 1 image: image/png, 68 bytes)``: what an offline model says of media it
    cannot look at; empty for none."""
    if not media:
        return ""
    return f"(received {_counted(media)}: {'; '.join(_described(m) for m in media)})"


def _attached(turn: list[Message]) -> list[MediaPart]:
    first = turn[0] if turn else None
    if not isinstance(first, UserMessage):
        return []
    return [p for p in first.parts if isinstance(p, ImagePart | DocumentPart)]


def _first_of_turn(turn: list[Message]) -> bool:
    return not any(isinstance(m, AssistantMessage) for m in turn)


def _with(text: str, note: str) -> str:
    return f"{text} {note}" if text and note else text or note


def _current_turn(messages: list[Message]) -> list[Message]:
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], UserMessage):
            return messages[index:]
    return messages


#: the offline summary starts with how many model responses it folds (so the script model
#: still knows which response comes next after a compaction)
_FOLDED = re.compile(r"^\(offline summary of (\d+) response")
_SUMMARY_LINES = 6


def _folded_responses(messages: list[Message]) -> int:
    first = messages[0] if messages else None
    if isinstance(first, UserMessage) and first.compaction is not None:
        found = _FOLDED.search(first.text.split("\n", 1)[-1])
        return int(found.group(1)) if found else 0
    return 0


def offline_summary(request: ModelRequest) -> str:
    """The deterministic summary the offline models write for a compaction request: how many
    responses it folds, then the last few lines of the rendered history, each cut short."""
    last = request.messages[-1] if request.messages else None
    rendered = last.text if isinstance(last, UserMessage) else ""
    lines = [line for line in rendered.splitlines() if line.strip()]
    responses = sum(line.startswith("assistant:") for line in lines)
    # an earlier summary being folded again: its count carries over
    earlier = [_FOLDED.match(line) for line in lines]
    responses += sum(int(found.group(1)) for found in earlier if found)
    recent = [line[:100] for line, found in zip(lines, earlier, strict=True) if not found]
    body = "\n".join(f"- {line}" for line in recent[-_SUMMARY_LINES:])
    return f"(offline summary of {responses} responses, {len(lines)} messages)\n{body}"


class OfflineTestModel:
    """``offline/test``: exercise every tool once, then report what came back."""

    model_id = "offline/test"

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if request.purpose == "compaction":
            return respond(request, offline_summary(request), [])
        turn = _current_turn(request.messages)
        results = [m for m in turn if isinstance(m, ToolResultMessage)]
        step = sum(isinstance(m, AssistantMessage) for m in request.messages)
        final = [t for t in request.tools if t.name == FINAL_ANSWER_TOOL]
        others = [t for t in request.tools if t.name != FINAL_ANSWER_TOOL]
        if results or not others:
            # a typed answer is a sample of its schema, given with the summary
            answer = [(f"call_{step}_0", t.name, sample(t.input_schema)) for t in final]
            return respond(request, self.summary(turn, results), answer)
        calls = [
            (f"call_{step}_{i}", tool.name, sample(tool.input_schema))
            for i, tool in enumerate(others)
        ]
        return respond(request, "", calls)

    def summary(self, turn: list[Message], results: list[ToolResultMessage]) -> str:
        asked = turn[0].text if turn and isinstance(turn[0], UserMessage) else ""
        received = acknowledgement(_attached(turn))
        if not results:
            return _with(f"(offline/test) You said: {asked}", received)
        names = {
            c.id: c.name for m in turn if isinstance(m, AssistantMessage) for c in m.tool_calls
        }
        lines = [
            f"- {r.name or names.get(r.tool_call_id, '?')}: "
            f"{'error: ' if r.is_error else ''}{_with(r.content[:120], acknowledgement(r.media))}"
            for r in results
        ]
        heading = _with(f"(offline/test) I called {len(results)} tool(s):", received)
        return heading + "\n" + "\n".join(lines)


Script = list[ScriptedResponse] | dict[str, list[ScriptedResponse]]


class OfflineScriptModel:
    """``offline/script:<path>``: replay scripted responses in order.

    The file is a list of responses, which every node using this model replays, or an
    object mapping node ids (``__root__``, ``researcher``) to lists when subagents share the
    model: each node's sessions replay their own.
    """

    def __init__(self, path: Path, *, label: str) -> None:
        self.path: Path | None = path
        self.label = label
        self.model_id = f"offline/script:{label}"
        try:
            script = msgspec.json.decode(path.read_bytes(), type=Script)
        except FileNotFoundError:
            raise OfflineScriptError(f"offline script {label} not found at {path}") from None
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            raise OfflineScriptError(
                f"offline script {label} is not a list of {{text, tool_calls}} responses, or "
                f"an object of such lists by node id: {error}"
            ) from error
        self.script = script

    @classmethod
    def replaying(cls, script: Script, *, label: str) -> OfflineScriptModel:
        """A script given as values rather than a file (an eval case's inline replies)."""
        model = cls.__new__(cls)
        model.path, model.label, model.script = None, label, script
        model.model_id = f"offline/script:{label}"
        return model

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if request.purpose == "compaction":
            # a summary is not a scripted response: the script stays where it was
            return respond(request, offline_summary(request), [])
        script = self.script
        if isinstance(script, dict) and request.node_id not in script:
            raise OfflineScriptError(
                f"offline script {self.label} has no responses for node {request.node_id!r} "
                f"(it has {', '.join(sorted(script))})"
            )
        responses = script[request.node_id] if isinstance(script, dict) else script
        index = sum(isinstance(m, AssistantMessage) for m in request.messages)
        index += _folded_responses(request.messages)
        if index >= len(responses):
            raise OfflineScriptError(
                f"offline script {self.label} has {len(responses)} response(s) for "
                f"{request.node_id} and request {index + 1} asked for another; add responses"
            )
        response = responses[index]
        calls = [(f"call_{index}_{i}", c.name, c.input) for i, c in enumerate(response.tool_calls)]
        turn = _current_turn(request.messages)
        text = response.text
        if _first_of_turn(turn):
            text = _with(text, acknowledgement(_attached(turn)))
        return respond(request, text, calls)
