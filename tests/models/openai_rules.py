"""What OpenAI's APIs refuse, as checks over a request body: each returns the provider's own
error (message and parameter) for the first rule a request breaks, or None.

Every rule names the documentation it comes from. Where the documentation states a rule but
not the error text, the text is the one the API answers with (quoted in the issues cited).
Sources:

* Responses: https://platform.openai.com/docs/api-reference/responses/create (``input`` item
  types, ``include`` values, ``store``, ``max_output_tokens`` >= 16).
* Reasoning: https://platform.openai.com/docs/guides/reasoning ("Keeping reasoning items in
  context": with ``store: false`` pass back every reasoning item since the last user message
  together with the function call it led to, with ``encrypted_content`` asked for through
  ``include: ["reasoning.encrypted_content"]``; effort and summaries are for reasoning models).
* Function calling: https://platform.openai.com/docs/guides/function-calling (every
  ``function_call_output`` answers a ``function_call`` by ``call_id``; Chat Completions: every
  ``tool_call`` is answered by a ``tool`` message, whose content is text).
* Structured outputs: https://platform.openai.com/docs/guides/structured-outputs#supported-schemas
  (strict schemas: all fields required, ``additionalProperties: false`` in every object).
* Chat Completions: https://platform.openai.com/docs/api-reference/chat/create (content part
  types; ``max_tokens`` is refused by reasoning models in favour of
  ``max_completion_tokens``); function tools with ``reasoning_effort`` are refused for newer
  reasoning models ("Function tools with reasoning_effort are not supported for <model> in
  /v1/chat/completions", https://github.com/openai/openai-openapi/issues/541).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: the reasoning models of the scripts (reasoning, encrypted content, max_completion_tokens)
REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5", "codex")
#: the models that refuse function tools with reasoning_effort on Chat Completions
REFUSE_TOOLS_WITH_EFFORT = ("gpt-5.4", "gpt-5.6")

_INPUT_ITEM_TYPES = {
    "message",
    "function_call",
    "function_call_output",
    "reasoning",
    "web_search_call",
    "file_search_call",
    "computer_call",
    "computer_call_output",
    "image_generation_call",
    "code_interpreter_call",
    "item_reference",
}
_INCLUDABLE = {
    "reasoning.encrypted_content",
    "message.output_text.logprobs",
    "web_search_call.action.sources",
    "code_interpreter_call.outputs",
    "file_search_call.results",
    "message.input_image.image_url",
    "computer_call_output.output.image_url",
}
_INPUT_CONTENT = {"input_text", "input_image", "input_file"}
_OUTPUT_CONTENT = {"output_text", "refusal"}
_CHAT_CONTENT = {"text", "image_url", "file", "input_audio"}


@dataclass(frozen=True)
class Refusal:
    """The API's answer to a request it refuses."""

    message: str
    param: str | None = None
    status: int = 400

    def body(self) -> dict[str, Any]:
        kind = "invalid_request_error"
        return {"error": {"message": self.message, "type": kind, "param": self.param, "code": None}}


@dataclass
class Produced:
    """What the server produced earlier, which a later request must send back intact."""

    #: reasoning item id → its encrypted content
    reasoning: dict[str, str] = field(default_factory=dict)
    #: call_id → the reasoning item that came before the call in its response
    reasoned_calls: dict[str, str] = field(default_factory=dict)


def reasons(model: str) -> bool:
    return model.startswith(REASONING_PREFIXES)


def strict_problem(schema: Any, where: str = "()") -> str | None:
    """Why strict mode refuses ``schema`` (structured outputs, "Supported schemas")."""
    if isinstance(schema, list):
        return next((p for s in schema if (p := strict_problem(s, where))), None)
    if not isinstance(schema, dict):
        return None
    if schema.get("type") == "object" or isinstance(schema.get("properties"), dict):
        properties = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False:
            return (
                f"In context={where}, 'additionalProperties' is required to be supplied "
                "and to be false."
            )
        missing = sorted(set(properties) - set(schema.get("required") or ()))
        if missing:
            return (
                f"In context={where}, 'required' is required to be supplied and to be an "
                f"array including every key in properties. Missing '{missing[0]}'."
            )
    skip = {"enum", "const", "default", "examples", "required"}
    for key, value in schema.items():
        if key not in skip and (problem := strict_problem(value, f"{where}.{key}")):
            return problem
    return None


def check_responses(body: dict[str, Any], produced: Produced) -> Refusal | None:
    """The first rule of the Responses API that ``body`` breaks."""
    model = str(body.get("model", ""))
    for check in (_check_params, _check_tools, _check_format):
        if refusal := check(body, model):
            return refusal
    items = body.get("input")
    if isinstance(items, str):
        return None
    if not isinstance(items, list):
        return Refusal("Invalid type for 'input': expected a string or an array.", "input")
    return _check_items(items, store=body.get("store", True) is not False, produced=produced)


def _check_params(body: dict[str, Any], model: str) -> Refusal | None:
    include = body.get("include") or []
    for value in include:
        if value not in _INCLUDABLE:
            return Refusal(f"Invalid value: '{value}'.", "include")
    if "reasoning.encrypted_content" in include and not reasons(model):
        return Refusal("Encrypted content is not supported with this model.", "include")
    if body.get("reasoning") is not None and not reasons(model):
        return Refusal(
            "Unsupported parameter: 'reasoning.effort' is not supported with this model.",
            "reasoning.effort",
        )
    limit = body.get("max_output_tokens")
    if isinstance(limit, int) and limit < 16:
        return Refusal(
            "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, "
            f"but got {limit} instead.",
            "max_output_tokens",
        )
    return None


def _check_tools(body: dict[str, Any], model: str) -> Refusal | None:
    for i, tool in enumerate(body.get("tools") or []):
        if tool.get("type") != "function":
            continue
        if not tool.get("name"):
            return Refusal(f"Missing required parameter: 'tools[{i}].name'.", f"tools[{i}].name")
        strict = tool.get("strict", True)  # function tools are strict unless told otherwise
        problem = strict_problem(tool.get("parameters")) if strict else None
        if problem:
            return Refusal(
                f"Invalid schema for function '{tool['name']}': {problem}", f"tools[{i}].parameters"
            )
    return None


def _check_format(body: dict[str, Any], model: str) -> Refusal | None:
    fmt = (body.get("text") or {}).get("format")
    if not fmt or fmt.get("type") != "json_schema":
        return None
    if not fmt.get("name") or not isinstance(fmt.get("schema"), dict):
        return Refusal("Missing required parameter: 'text.format.name'.", "text.format.name")
    problem = strict_problem(fmt["schema"]) if fmt.get("strict") else None
    if problem:
        return Refusal(
            f"Invalid schema for response_format '{fmt['name']}': {problem}", "text.format.schema"
        )
    return None


def _check_items(items: list[Any], *, store: bool, produced: Produced) -> Refusal | None:
    calls: set[str] = set()
    answered: set[str] = set()
    reasoning_seen: set[str] = set()
    for i, item in enumerate(items):
        kind = item.get("type", "message")
        if kind not in _INPUT_ITEM_TYPES:
            supported = ", ".join(f"'{k}'" for k in sorted(_INPUT_ITEM_TYPES))
            return Refusal(
                f"Invalid value: '{kind}'. Supported values are: {supported}.", f"input[{i}].type"
            )
        refusal = None
        if kind == "message":
            refusal = _check_message(item, i)
        elif kind == "reasoning":
            refusal = _check_reasoning(item, store=store, produced=produced)
            reasoning_seen.add(str(item.get("id")))
        elif kind == "function_call":
            refusal = _check_call(item, reasoning_seen, produced)
            calls.add(str(item.get("call_id")))
        elif kind == "function_call_output":
            call_id = str(item.get("call_id"))
            if call_id not in calls:
                refusal = Refusal(
                    f"No tool call found for function call output with call_id {call_id}.",
                    "input",
                )
            answered.add(call_id)
        if refusal:
            return refusal
    unanswered = sorted(calls - answered)
    if unanswered:
        return Refusal(f"No tool output found for function call {unanswered[0]}.", "input")
    return None


def _check_message(item: dict[str, Any], i: int) -> Refusal | None:
    role = item.get("role")
    if role not in ("user", "assistant", "system", "developer"):
        return Refusal(f"Invalid value: '{role}'.", f"input[{i}].role")
    content = item.get("content")
    if isinstance(content, str):
        return None
    allowed = _OUTPUT_CONTENT if role == "assistant" else _INPUT_CONTENT
    for j, part in enumerate(content or []):
        where = f"input[{i}].content[{j}]"
        if part.get("type") not in allowed:
            return Refusal(f"Invalid value: '{part.get('type')}'.", f"{where}.type")
        if part["type"] == "input_image" and not (part.get("image_url") or part.get("file_id")):
            return Refusal(f"Missing required parameter: '{where}.image_url'.", where)
        if part["type"] == "input_file" and part.get("file_data") and not part.get("filename"):
            return Refusal(f"Missing required parameter: '{where}.filename'.", where)
    return None


def _check_reasoning(item: dict[str, Any], *, store: bool, produced: Produced) -> Refusal | None:
    item_id = str(item.get("id"))
    encrypted = item.get("encrypted_content")
    if encrypted is None:
        if store:
            return None  # a stored response's item is found by id
        return Refusal(
            f"Item with id '{item_id}' not found. Items are not persisted when `store` is set "
            "to false. Try again with `store` set to true, or remove this item from your input.",
            "input",
            status=404,
        )
    if produced.reasoning.get(item_id) != encrypted:
        return Refusal(f"The encrypted content for item {item_id} could not be verified.", "input")
    return None


def _check_call(
    item: dict[str, Any], reasoning_seen: set[str], produced: Produced
) -> Refusal | None:
    call_id = str(item.get("call_id"))
    needed = produced.reasoned_calls.get(call_id)
    if needed is not None and needed not in reasoning_seen:
        return Refusal(
            f"Item '{call_id}' of type 'function_call' was provided without its required "
            f"'reasoning' item: '{needed}'.",
            "input",
        )
    return None


def check_chat(body: dict[str, Any]) -> Refusal | None:
    """The first rule of Chat Completions that ``body`` breaks."""
    model = str(body.get("model", ""))
    effort = body.get("reasoning_effort")
    if (
        body.get("tools")
        and effort not in (None, "none")
        and model.startswith(REFUSE_TOOLS_WITH_EFFORT)
    ):
        return Refusal(
            f"Function tools with reasoning_effort are not supported for {model} in "
            "/v1/chat/completions. Please use /v1/responses instead.",
            "reasoning_effort",
        )
    if "max_tokens" in body and reasons(model):
        return Refusal(
            "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
            "max_tokens",
        )
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        spec = fmt.get("json_schema") or {}
        problem = strict_problem(spec.get("schema")) if spec.get("strict") else None
        if problem:
            return Refusal(
                f"Invalid schema for response_format '{spec.get('name')}': {problem}",
                "response_format",
            )
    return _check_chat_messages(body.get("messages") or [])


def _check_chat_messages(messages: list[dict[str, Any]]) -> Refusal | None:
    pending: list[str] = []
    for i, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            if message.get("tool_call_id") not in pending:
                return Refusal(
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'.",
                    f"messages.[{i}].role",
                )
            pending.remove(message["tool_call_id"])
        elif pending:
            return Refusal(
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(pending)}",
                f"messages.[{i}].role",
            )
        if role == "assistant":
            pending = [c["id"] for c in message.get("tool_calls") or []]
        content = message.get("content")
        allowed = {"text"} if role in ("tool", "system", "assistant") else _CHAT_CONTENT
        for j, part in enumerate(content if isinstance(content, list) else []):
            if part.get("type") not in allowed:
                return Refusal(
                    f"Invalid value: '{part.get('type')}'. Supported values are: "
                    + ", ".join(f"'{k}'" for k in sorted(allowed))
                    + ".",
                    f"messages[{i}].content[{j}].type",
                )
    if pending:
        return Refusal(
            "An assistant message with 'tool_calls' must be followed by tool messages "
            "responding to each 'tool_call_id'. The following tool_call_ids did not have "
            f"response messages: {', '.join(pending)}",
            "messages",
        )
    return None
