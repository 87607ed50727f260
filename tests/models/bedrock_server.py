"""A loopback stand-in for Amazon Bedrock's ConverseStream that keeps its documented rules.

It answers ``POST /model/<model id>/converse-stream`` as the service does: an
``application/vnd.amazon.eventstream`` body (``tests/models/eventstream``) of events built
from scripted content blocks, reasoning signatures only it can check, prompt-cache
accounting, and the errors the API answers with. Each rule names its documentation:

* **Signature Version 4** ("AWS Signature Version 4 for API requests",
  https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv.html; "Common Errors",
  https://docs.aws.amazon.com/bedrock/latest/APIReference/CommonErrors.html): an
  ``Authorization`` header ``AWS4-HMAC-SHA256 Credential=<key id>/<date>/<region>/bedrock/
  aws4_request, SignedHeaders=…, Signature=<64 hex>`` and an ``X-Amz-Date`` are required
  (``MissingAuthenticationToken``, ``IncompleteSignature``); the key id must be known
  (``InvalidClientTokenId``) and the signature must be the one its secret makes over the
  request (botocore's own signer recomputes it: ``SignatureDoesNotMatch``). A Bedrock API key
  (``Authorization: Bearer …``, "Amazon Bedrock API keys") is taken instead when known.
* **Messages** ("Converse", ``messages``; "Message", https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Message.html):
  a conversation starts with a ``user`` message and alternates roles; a ``text`` block may
  not be blank.
* **Tool use** ("Use a tool to complete an Amazon Bedrock model response",
  https://docs.aws.amazon.com/bedrock/latest/userguide/tool-use.html; "ToolResultBlock"): a
  request whose messages hold ``toolUse`` or ``toolResult`` blocks needs a ``toolConfig``;
  the user message after an assistant's ``toolUse`` blocks answers every one of them with a
  ``toolResult`` of its ``toolUseId``, and answers nothing else; ``status`` is "only
  supported by Amazon Nova and Anthropic Claude 3 and 4 models".
* **Reasoning** ("ReasoningTextBlock", https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ReasoningTextBlock.html):
  "If you pass a reasoning block back to the API in a multi-turn conversation, include the
  text and its signature unmodified": a ``reasoningText`` without its signature, or with one
  not made for its text, is refused, as is ``redactedContent`` the server never sent.
  ``thinking`` in ``additionalModelRequestFields`` is Claude's ("Extended thinking",
  https://docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-extended-thinking.html):
  another model refuses the field, and ``budget_tokens`` is at least 1,024 and below
  ``maxTokens``.
* **Prompt caching** ("Prompt caching",
  https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html): ``cachePoint``
  blocks only on the models and fields that take them (Claude: system, messages, tools; Nova:
  system and messages), at most 4; a prefix up to a cache point of at least 1,024 tokens is
  written (``cacheWriteInputTokens``) and read back by a later request that repeats it
  (``cacheReadInputTokens``); ``inputTokens`` counts the rest.
* **Media** ("ImageBlock", "DocumentBlock"): an image's format is png, jpeg, gif or webp and
  its bytes are base64 in JSON; a document's name holds only "alphanumeric characters,
  whitespace characters (no more than one in a row), hyphens, parentheses, and square
  brackets".
* **Errors** ("ConverseStream", Errors; "ConverseStreamOutput"): a refused request is a 400
  ``ValidationException``, throttling a 429 ``ThrottlingException``, an unready model a 429
  ``ModelNotReadyException``, an outage a 503 ``ServiceUnavailableException``, each a JSON
  ``{"message": …}`` with the type in ``x-amzn-ErrorType``; a model failing mid-stream sends a
  ``modelStreamErrorException`` event in the 200 stream.

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
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from tests.models import eventstream
from tests.models.sse_server import Received, Reply, ScriptedServer

MIN_CACHEABLE = 1024
MAX_CACHE_POINTS = 4
_PATH = re.compile(r"^/model/([^/]+)/converse-stream$")
_AUTH = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([a-z0-9-]+)/bedrock/aws4_request, "
    r"SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$"
)
_DOCUMENT_NAME = re.compile(r"^(?!.*\s\s)[A-Za-z0-9\s\-()\[\]]+$")
_ERROR_NAMESPACE = "http://internal.amazon.com/coral/com.amazon.bedrock/"


@dataclass
class Turn:
    """One scripted response: content blocks as Converse returns them (``{"text": …}``,
    ``{"toolUse": {…}}``, ``{"reasoningContent": {"reasoningText": {"text": …}}}``, which the
    server signs, or ``{"reasoningContent": {"redactedContent": …}}``), why it stopped, and
    its output tokens. ``fail_after``: a ``modelStreamErrorException`` after that many events."""

    blocks: list[dict[str, Any]]
    stop: str | None = None
    output_tokens: int = 5
    fail_after: int | None = None


Script = Turn | Reply | Callable[[dict[str, Any]], "Turn | Reply"]


class Rejected(Exception):
    def __init__(self, message: str, *, code: str = "ValidationException", status: int = 400):
        super().__init__(message)
        self.code = code
        self.status = status


def error_reply(status: int, code: str, message: str) -> Reply:
    body = json.dumps({"message": message}).encode()
    headers = {"Content-Type": "application/json", "x-amzn-ErrorType": f"{code}:{_ERROR_NAMESPACE}"}
    return Reply(status=status, headers=headers, chunks=[body], streaming=False)


def throttled() -> Reply:
    return error_reply(
        429, "ThrottlingException", "Too many requests, please wait before trying again."
    )


def unavailable() -> Reply:
    return error_reply(
        503, "ServiceUnavailableException", "Bedrock is unable to process your request."
    )


def not_ready() -> Reply:
    return error_reply(
        429, "ModelNotReadyException", "Model is not ready to serve inference requests."
    )


def stream(frames: list[bytes], *, cut: bool = False) -> Reply:
    chunks: list[bytes | float] = list(frames)
    return Reply(
        headers={"Content-Type": "application/vnd.amazon.eventstream"}, chunks=chunks, cut=cut
    )


def recorded_stream(events: list[dict[str, Any]]) -> Reply:
    """A recorded stream (one ``{"<event>": {...}}`` per item) framed as the service sends it."""
    frames = [eventstream.event(name, body) for item in events for name, body in item.items()]
    return stream(frames)


def tokens(value: Any) -> int:
    return max(1, (len(json.dumps(value, sort_keys=True)) + 3) // 4)


def _family(model: str) -> str:
    for vendor, family in (("anthropic.claude", "anthropic"), ("amazon.nova", "nova")):
        if vendor in model:
            return family
    return "other"


class BedrockServer(ScriptedServer):
    """``with BedrockServer() as api: api.script(Turn(...), ...)``; ``api.url`` is the
    ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` and ``api.env`` what a client needs to reach it."""

    def __init__(self, *, key_id: str = "AKIAEVETESTKEY000001", secret: str | None = None) -> None:
        super().__init__()
        self.key_id = key_id
        self.secret = secret or "eve-test-secret/" + os.urandom(12).hex()
        self.bearer_tokens: set[str] = set()
        self.scripts: list[Script] = []
        self._signing = os.urandom(16)
        self._cached: set[str] = set()
        #: each request's body, and the model id its path named
        self.bodies: list[dict[str, Any]] = []
        self.models: list[str] = []
        #: the usage each answered request reported
        self.usages: list[dict[str, int]] = []

    def __enter__(self) -> BedrockServer:
        super().__enter__()
        return self

    @property
    def env(self) -> dict[str, str]:
        return {
            "AWS_ACCESS_KEY_ID": self.key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret,
            "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": self.url,
        }

    def script(self, *scripts: Script) -> None:
        self.scripts.extend(scripts)

    def reply_to(self, received: Received) -> Reply:
        found = _PATH.match(received.path)
        if found is None:
            return error_reply(
                404, "UnknownOperationException", f"no such operation: {received.path}"
            )
        try:
            self._check_auth(received)
            model, body = unquote(found.group(1)), received.body or {}
            self.bodies.append(body)
            self.models.append(model)
            self._check(model, body)
        except Rejected as error:
            return error_reply(error.status, error.code, str(error))
        answer = self.play(self.scripts, body)
        if isinstance(answer, Reply):
            return answer
        return stream(self._frames(model, body, answer))

    # --- Signature Version 4 -------------------------------------------------------------

    def _check_auth(self, received: Received) -> None:
        header = received.headers.get("authorization")
        if header is None:
            raise Rejected(
                "Missing Authentication Token",
                code="MissingAuthenticationTokenException",
                status=403,
            )
        if header.startswith("Bearer "):
            if header.removeprefix("Bearer ") not in self.bearer_tokens:
                raise Rejected("Invalid API Key format", code="UnauthorizedException", status=403)
            return
        found = _AUTH.match(header)
        date = received.headers.get("x-amz-date", "")
        if found is None or not date.startswith(found.group(2)):
            raise Rejected(
                f"Authorization header is malformed: {header[:40]}…",
                code="IncompleteSignatureException",
            )
        key_id, _, region, signed, signature = found.groups()
        if key_id != self.key_id:
            raise Rejected(
                "The security token included in the request is invalid.",
                code="UnrecognizedClientException",
                status=403,
            )
        names = signed.split(";")
        if not {"host", "x-amz-date"} <= set(names):
            raise Rejected(
                "Signed headers must include host and x-amz-date",
                code="IncompleteSignatureException",
            )
        request = AWSRequest(
            method="POST",
            url=self.url + received.path,
            data=received.raw,
            headers={name: received.headers.get(name, "") for name in names},
        )
        request.context["timestamp"] = date
        token = received.headers.get("x-amz-security-token")
        signer = SigV4Auth(Credentials(self.key_id, self.secret, token), "bedrock", region)
        expected = signer.signature(
            signer.string_to_sign(request, signer.canonical_request(request)), request
        )
        if not hmac.compare_digest(expected, signature):
            raise Rejected(
                "The request signature we calculated does not match the signature you provided.",
                code="InvalidSignatureException",
                status=403,
            )

    # --- the rules -------------------------------------------------------------------------

    def _check(self, model: str, body: dict[str, Any]) -> None:
        messages: list[dict[str, Any]] = body.get("messages") or []
        if not messages or messages[0].get("role") != "user":
            raise Rejected(
                "A conversation must start with a user message. Try again with a conversation that starts with a user message."
            )
        for n, message in enumerate(messages):
            if n and message.get("role") == messages[n - 1].get("role"):
                raise Rejected(
                    "A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again."
                )
            for m, block in enumerate(message.get("content") or []):
                self._check_block(model, block, f"messages.{n}.content.{m}")
        self._check_tools(model, body, messages)
        self._check_thinking(model, body)
        self._check_cache_points(model, body)

    def _check_block(self, model: str, block: dict[str, Any], where: str) -> None:
        if "text" in block and not str(block["text"]).strip():
            raise Rejected(
                f"The text field in the ContentBlock object at {where} is blank. Add text to the text field, and try again."
            )
        if isinstance(reasoning := block.get("reasoningContent"), dict):
            self._check_reasoning(model, reasoning, where)
        if isinstance(image := block.get("image"), dict):
            if image.get("format") not in ("png", "jpeg", "gif", "webp"):
                raise Rejected(f"{where}.image.format: unsupported format {image.get('format')!r}")
            _decoded(image.get("source", {}).get("bytes", ""), f"{where}.image.source.bytes")
        document = block.get("document")
        if isinstance(document, dict) and not _DOCUMENT_NAME.match(str(document.get("name"))):
            raise Rejected(
                f"{where}.document.name: The document file name can only contain alphanumeric characters, whitespace characters, hyphens, parentheses, and square brackets. The name can't contain more than one consecutive whitespace character."
            )

    def _check_reasoning(self, model: str, reasoning: dict[str, Any], where: str) -> None:
        if "redactedContent" in reasoning:
            data = _decoded(
                reasoning["redactedContent"], f"{where}.reasoningContent.redactedContent"
            )
            if not data.startswith(self._signing[:4]):
                raise Rejected(f"{where}: the redacted reasoning was not produced by this model")
            return
        text = (reasoning.get("reasoningText") or {}).get("text", "")
        signature = (reasoning.get("reasoningText") or {}).get("signature")
        if _family(model) == "anthropic" and not signature:
            raise Rejected(f"{where}.reasoningContent.reasoningText.signature: Field required")
        if signature and not hmac.compare_digest(signature, self._sign(text)):
            raise Rejected(f"{where}: Invalid `signature` in `thinking` block")

    def _check_tools(
        self, model: str, body: dict[str, Any], messages: list[dict[str, Any]]
    ) -> None:
        uses_tools = any(
            "toolUse" in b or "toolResult" in b for m in messages for b in m.get("content") or []
        )
        if uses_tools and not (body.get("toolConfig") or {}).get("tools"):
            raise Rejected(
                "The toolConfig field must be defined when using toolUse and toolResult content blocks."
            )
        for n, message in enumerate(messages):
            results = [b["toolResult"] for b in message.get("content") or [] if "toolResult" in b]
            if results and _family(model) == "other" and any("status" in r for r in results):
                raise Rejected(
                    "This model doesn't support the toolResult.status field. Remove toolResult.status and try again."
                )
            if message.get("role") != "assistant":
                continue
            asked = [
                b["toolUse"]["toolUseId"] for b in message.get("content") or [] if "toolUse" in b
            ]
            if n + 1 >= len(messages):
                continue
            answered = [
                b["toolResult"]["toolUseId"]
                for b in messages[n + 1].get("content") or []
                if "toolResult" in b
            ]
            if len(answered) > len(asked):
                raise Rejected(
                    f"The number of toolResult blocks at messages.{n + 1}.content exceeds the number of toolUse blocks of previous turn."
                )
            if missing := [i for i in asked if i not in answered]:
                raise Rejected(
                    f"Expected toolResult blocks at messages.{n + 1}.content for the following Ids: {', '.join(missing)}"
                )
            if stray := [i for i in answered if i not in asked]:
                raise Rejected(
                    f"messages.{n + 1}.content: toolResult for unknown toolUseId {stray[0]}"
                )
        if any("toolResult" in b for b in messages[0].get("content") or []):
            raise Rejected(
                "The number of toolResult blocks at messages.0.content exceeds the number of toolUse blocks of previous turn."
            )

    def _check_thinking(self, model: str, body: dict[str, Any]) -> None:
        thinking = (body.get("additionalModelRequestFields") or {}).get("thinking")
        if thinking is None:
            return
        if _family(model) != "anthropic":
            raise Rejected(
                "The model returned the following errors: Malformed input request: extraneous key [thinking] is not permitted, please reformat your input and try again."
            )
        messages = body.get("messages") or []
        last, before = messages[-1], messages[-2] if len(messages) > 1 else {}
        answers = any("toolResult" in b for b in last.get("content") or [])
        opening = (before.get("content") or [{}])[0]
        if answers and "reasoningContent" not in opening:
            # "Extended thinking with tool use": the assistant turn whose calls are answered
            # must start with its thinking while thinking is on
            raise Rejected(
                "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but "
                "found `tool_use`. When `thinking` is enabled, a final `assistant` message must "
                "start with a thinking block."
            )
        if thinking.get("type") == "enabled":
            budget = int(thinking.get("budget_tokens") or 0)
            limit = int((body.get("inferenceConfig") or {}).get("maxTokens") or 0)
            if budget < 1024 or budget >= limit:
                raise Rejected(
                    f"thinking.budget_tokens: {budget} must be at least 1024 and less than max_tokens ({limit})"
                )

    def _check_cache_points(self, model: str, body: dict[str, Any]) -> None:
        family = _family(model)
        tools = (body.get("toolConfig") or {}).get("tools") or []
        places = {
            "system": body.get("system") or [],
            "tools": tools,
            "messages": [b for m in body.get("messages") or [] for b in m.get("content") or []],
        }
        counts = {where: sum("cachePoint" in b for b in blocks) for where, blocks in places.items()}
        if sum(counts.values()) and family == "other":
            raise Rejected(
                f"The model {model} does not support prompt caching. Remove cachePoint blocks and try again."
            )
        if counts["tools"] and family == "nova":
            raise Rejected("Amazon Nova models do not support cachePoint in toolConfig.tools.")
        if sum(counts.values()) > MAX_CACHE_POINTS:
            raise Rejected(
                f"A maximum of {MAX_CACHE_POINTS} cachePoint blocks may be provided. Found {sum(counts.values())}."
            )

    # --- the response ----------------------------------------------------------------------

    def _sign(self, text: str) -> str:
        digest = hmac.new(self._signing, text.encode(), hashlib.sha256).digest()
        return base64.b64encode(digest).decode()

    def _usage(self, body: dict[str, Any], turn: Turn) -> dict[str, int]:
        """Tokens read from and written to the cache at the request's cache points."""
        segments = [
            *((body.get("toolConfig") or {}).get("tools") or []),
            *(body.get("system") or []),
            *[
                {"role": m["role"], **b}
                for m in body.get("messages") or []
                for b in m.get("content") or []
            ],
        ]
        points = [
            (json.dumps(segments[:k], sort_keys=True), tokens(segments[:k]))
            for k, segment in enumerate(segments)
            if "cachePoint" in segment
        ]
        read = max((size for key, size in points if key in self._cached), default=0)
        write = 0
        if points and points[-1][0] not in self._cached and points[-1][1] >= MIN_CACHEABLE:
            write = points[-1][1] - read
        self._cached.update(key for key, size in points if size >= MIN_CACHEABLE)
        total = tokens(segments)
        usage = {
            "inputTokens": max(total - read - write, 1),
            "outputTokens": turn.output_tokens,
            "totalTokens": total + turn.output_tokens,
        }
        if points:
            usage["cacheReadInputTokens"] = read
            usage["cacheWriteInputTokens"] = write
        return usage

    def _frames(self, model: str, body: dict[str, Any], turn: Turn) -> list[bytes]:
        events: list[tuple[str, dict[str, Any]]] = [("messageStart", {"role": "assistant"})]
        for index, block in enumerate(turn.blocks):
            events.extend(self._block_events(index, block))
        called = any("toolUse" in b for b in turn.blocks)
        stop = turn.stop or ("tool_use" if called else "end_turn")
        usage = self._usage(body, turn)
        self.usages.append(usage)
        events.append(("messageStop", {"stopReason": stop}))
        events.append(("metadata", {"usage": usage, "metrics": {"latencyMs": 12}}))
        frames = [eventstream.event(name, payload) for name, payload in events]
        if turn.fail_after is not None:
            failure = {
                "message": "Model Stream Error",
                "originalStatusCode": 500,
                "originalMessage": "The model stream failed.",
            }
            frames = [
                *frames[: turn.fail_after],
                eventstream.exception("modelStreamErrorException", failure),
            ]
        return frames

    def _block_events(self, index: int, block: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        def delta(value: dict[str, Any]) -> tuple[str, dict[str, Any]]:
            return "contentBlockDelta", {"contentBlockIndex": index, "delta": value}

        out: list[tuple[str, dict[str, Any]]] = []
        if "text" in block:
            text = str(block["text"])
            half = len(text) // 2
            out += [delta({"text": text[:half]}), delta({"text": text[half:]})]
        elif isinstance(use := block.get("toolUse"), dict):
            start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
            out.append(("contentBlockStart", {"contentBlockIndex": index, "start": start}))
            arguments = json.dumps(use.get("input") or {})
            half = len(arguments) // 2
            out += [
                delta({"toolUse": {"input": arguments[:half]}}),
                delta({"toolUse": {"input": arguments[half:]}}),
            ]
        elif isinstance(reasoning := block.get("reasoningContent"), dict):
            if "redactedContent" in reasoning:
                data = self._signing[:4] + str(reasoning["redactedContent"]).encode()
                out.append(
                    delta(
                        {"reasoningContent": {"redactedContent": base64.b64encode(data).decode()}}
                    )
                )
            else:
                text = str(reasoning["reasoningText"]["text"])
                half = len(text) // 2
                out += [
                    delta({"reasoningContent": {"text": text[:half]}}),
                    delta({"reasoningContent": {"text": text[half:]}}),
                    delta({"reasoningContent": {"signature": self._sign(text)}}),
                ]
        out.append(("contentBlockStop", {"contentBlockIndex": index}))
        return out


def _decoded(value: Any, where: str) -> bytes:
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError) as error:
        raise Rejected(f"{where}: the value is not valid base64") from error
