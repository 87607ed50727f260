"""eve: a filesystem-first framework for durable AI agents."""

from eve._version import __version__
from eve.authoring.agent import AgentDefinition, define_agent
from eve.errors import EveError

__all__ = ["AgentDefinition", "EveError", "__version__", "define_agent"]
