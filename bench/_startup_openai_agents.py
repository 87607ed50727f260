"""The OpenAI Agents SDK's cold start to first result: the one-tool agent of ``bench/startup.py``.

Run as a script in a fresh process (``python bench/_startup_openai_agents.py``). The SDK has
no test model, so a ``Model`` subclass answers at once, with no network: a call of ``add``
first, then text once the tool's output is in the input (two model requests, one tool call,
as eve's ``offline/test`` model makes for the same agent). Tracing is off: it would export
spans over the network.
"""

import json
from typing import Any

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)


class CannedModel(Model):
    async def get_response(  # type: ignore[override]
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        items = [] if isinstance(input, str) else input
        if any(_type(item) == "function_call_output" for item in items):
            text = ResponseOutputText(type="output_text", text="3", annotations=[])
            output: Any = ResponseOutputMessage(
                id="msg_1", type="message", role="assistant", status="completed", content=[text]
            )
        else:
            output = ResponseFunctionToolCall(
                type="function_call",
                call_id="call_1",
                name="add",
                arguments=json.dumps({"a": 1, "b": 2}),
            )
        return ModelResponse(output=[output], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("run non-streamed, as eve run and pydantic-ai's run_sync are")


def _type(item: Any) -> Any:
    return item.get("type") if isinstance(item, dict) else getattr(item, "type", None)


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


set_tracing_disabled(True)
agent = Agent(
    name="adder", instructions="You add numbers.", tools=[function_tool(add)], model=CannedModel()
)
result = Runner.run_sync(agent, "add 1 and 2")
print(result.final_output)
