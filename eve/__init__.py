"""eve: a filesystem-first framework for durable AI agents.

Names load on first use, so the ``eve`` command starts without importing pydantic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eve._lazy import lazy_attributes
from eve._version import __version__
from eve.errors import EveError

if TYPE_CHECKING:
    from eve.authoring.agent import (
        AgentDefinition,
        RuntimeConfig,
        define_agent,
        runtime_config_key,
    )
    from eve.authoring.deps import TurnInfo
    from eve.authoring.hooks import define_hook
    from eve.authoring.instructions import InstructionsContext, define_instructions

__all__ = [
    "AgentDefinition",
    "EveError",
    "InstructionsContext",
    "RuntimeConfig",
    "TurnInfo",
    "__version__",
    "define_agent",
    "define_hook",
    "define_instructions",
    "runtime_config_key",
]

_LAZY = {
    "AgentDefinition": "eve.authoring.agent",
    "RuntimeConfig": "eve.authoring.agent",
    "define_agent": "eve.authoring.agent",
    "runtime_config_key": "eve.authoring.agent",
    "define_hook": "eve.authoring.hooks",
    "TurnInfo": "eve.authoring.deps",
    "InstructionsContext": "eve.authoring.instructions",
    "define_instructions": "eve.authoring.instructions",
}


__getattr__ = lazy_attributes(__name__, _LAZY)
