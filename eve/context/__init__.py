"""Context keys and per-session state: ``from eve.context import ContextKey, define_state``."""

from eve.context.active import EveContext, active_context, current_principal, use_context
from eve.context.deps import current_deps
from eve.context.keys import JSON_CODEC, Codec, ContextKey
from eve.context.state import StateSlot, define_state

__all__ = [
    "JSON_CODEC",
    "Codec",
    "ContextKey",
    "EveContext",
    "StateSlot",
    "active_context",
    "current_deps",
    "current_principal",
    "define_state",
    "use_context",
]
