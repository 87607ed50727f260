"""The built-in channel kinds, by name: each a module with ``Options`` and ``routes``.

Internal: authors declare channels with ``eve.channels``'s constructors (docs/architecture.md,
"The public surface").
"""

from __future__ import annotations

#: imported only when an agent declares a channel of the kind: a kind's protocol package
#: (a2a-sdk, slack_sdk…) costs nothing to an agent without one
KIND_MODULES: dict[str, str] = {
    "ai_sdk": "eve.channels.kinds.ai_sdk",
    "ag_ui": "eve.channels.kinds.ag_ui",
    "a2a": "eve.channels.kinds.a2a",
    "mcp": "eve.channels.kinds.mcp",
    "openai": "eve.channels.kinds.openai",
    "slack": "eve.channels.kinds.slack",
    "custom": "eve.channels.kinds.custom",
}

#: the kinds that can post first, without a request to answer: a schedule may deliver its
#: run's answer through a channel of one of these (eve.schedules.channel_delivery)
SENDS_FIRST = frozenset({"slack"})
