"""Model clients: one protocol, one module per provider, each importing its SDK only inside it."""

from eve.models.base import ModelClient, ModelRequest, ProviderToolDeclaration, ToolDeclaration
from eve.models.events import (
    Done,
    ModelEvent,
    ReasoningDelta,
    TextDelta,
    TokenUsage,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)

__all__ = [
    "Done",
    "ModelClient",
    "ModelEvent",
    "ModelRequest",
    "ProviderToolDeclaration",
    "ReasoningDelta",
    "TextDelta",
    "TokenUsage",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolDeclaration",
]
