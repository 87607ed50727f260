"""Channels: the doors to an agent (``agent/channels/<name>.py``).

One file declares one channel with a constructor from here: ``ai_sdk(...)``, ``ag_ui(...)``,
``a2a(...)``, ``mcp(...)``, ``openai(...)``, ``slack(...)``, or ``define_channel(...)`` for
routes of your own. This module stays import-light: no kind module and no protocol package
loads until a server mounts a channel of that kind.
"""

from eve.authoring.channels import (
    ChannelDefinition,
    ChannelHandler,
    a2a,
    ag_ui,
    ai_sdk,
    define_channel,
    mcp,
    openai,
    slack,
)

__all__ = [
    "ChannelDefinition",
    "ChannelHandler",
    "a2a",
    "ag_ui",
    "ai_sdk",
    "define_channel",
    "mcp",
    "openai",
    "slack",
]
