"""Model clients: one protocol, one module per provider, each importing its SDK only inside it.

What a model plugin or a test needs: the protocol and its events, the test doubles
(``FunctionModel``, the offline models, ``respond`` to stream a reply as a provider does) and
the registry that turns a model id into a client. The doubles and the registry load on
first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eve._lazy import lazy_attributes
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

if TYPE_CHECKING:
    from eve.models.function import FunctionModel
    from eve.models.offline import OfflineScriptModel, OfflineTestModel, respond
    from eve.models.registry import choose_model, create_client

__all__ = [
    "Done",
    "FunctionModel",
    "ModelClient",
    "ModelEvent",
    "ModelRequest",
    "OfflineScriptModel",
    "OfflineTestModel",
    "ProviderToolDeclaration",
    "ReasoningDelta",
    "TextDelta",
    "TokenUsage",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolDeclaration",
    "choose_model",
    "create_client",
    "respond",
]

_LAZY = {
    "FunctionModel": "eve.models.function",
    "OfflineScriptModel": "eve.models.offline",
    "OfflineTestModel": "eve.models.offline",
    "respond": "eve.models.offline",
    "choose_model": "eve.models.registry",
    "create_client": "eve.models.registry",
}

__getattr__ = lazy_attributes(__name__, _LAZY)
