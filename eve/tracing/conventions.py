"""The OpenTelemetry GenAI semantic conventions eve's spans follow: names, kinds, attributes.

From the GenAI conventions (status: Development), as published at
https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-agent-spans/ (``invoke_agent``,
internal span) and https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/
(``chat``, client span; ``execute_tool``, internal span); source
``open-telemetry/semantic-conventions-genai`` ``docs/gen-ai/gen-ai-agent-spans.md``. Kept
as plain strings: ``opentelemetry-semantic-conventions`` marks these incubating, and eve's
core depends on ``opentelemetry-api`` only.
"""

from __future__ import annotations

import os

OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
FINISH_REASONS = "gen_ai.response.finish_reasons"
#: every input token, the cached ones included: the conventions say the cache kinds
#: "SHOULD be included in gen_ai.usage.input_tokens"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
CACHE_WRITE_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
ERROR_TYPE = "error.type"
#: on the span's ``exception`` event, the exception's stack trace "in a natural
#: representation for the language runtime" (Python's traceback text): the semantic
#: conventions for exceptions on spans, stable, at
#: https://opentelemetry.io/docs/specs/semconv/exceptions/exceptions-spans/
EXCEPTION_STACKTRACE = "exception.stacktrace"

# opt-in content (see ``capture_content``)
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"

# eve's own, under its namespace
TURN_ID = "eve.turn.id"
STOP_REASON = "eve.turn.stop_reason"
STEP_INDEX = "eve.step.index"
#: what the model call is for: ``turn`` (a step) or ``compaction`` (a history's summary)
REQUEST_PURPOSE = "eve.request.purpose"
TOOL_STATUS = "eve.tool.status"
PARENT_SESSION = "eve.parent.session_id"

#: the variable GenAI instrumentations read to record message content (off unless ``true``)
CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def capture_content() -> bool:
    """Whether spans carry message content: prompts, answers, tool arguments and results.

    Off by default, since content may hold personal data; ``true`` in
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` turns it on. Even then, known
    secrets are redacted (``eve._redact``)."""
    return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() == "true"


def provider_and_model(model_id: str) -> tuple[str, str]:
    """``anthropic/claude-…`` → (``anthropic``, ``claude-…``): eve's prefix is the provider."""
    provider, _, name = model_id.partition("/")
    return (provider, name) if name else ("_OTHER", model_id)
