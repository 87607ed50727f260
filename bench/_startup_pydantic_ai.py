"""pydantic-ai's cold start to first result: the one-tool agent of ``bench/startup.py``.

Run as a script in a fresh process (``python bench/_startup_pydantic_ai.py``). ``TestModel``
calls every tool once with generated arguments, then answers with text: the same two model
requests and one tool call as eve's ``offline/test`` model makes for the same agent.
"""

from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel

agent = Agent(TestModel(), instructions="You add numbers.")


@agent.tool_plain
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


result = agent.run_sync("add 1 and 2")
print(result.output)
