"""Web search, run by the model provider: no local execute, never imported at run time."""

from eve.tools import provider_tool

default = provider_tool(
    provider="anthropic",
    type="web_search_20250305",
    description="Search the web for current information.",
    config={"max_uses": 3},
)
