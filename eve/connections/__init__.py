"""MCP connections: ``from eve.connections import define_mcp_connection, from_env``.

This package also holds the connection pool (``eve.connections.pool``), the only module of
eve that imports the ``mcp`` SDK; it is imported only when an agent has connections.
"""

from eve.authoring.connection_auth import IdentityProvider, OAuth, identity_provider, oauth
from eve.authoring.connections import (
    EnvValue,
    MCPConnection,
    ToolFilter,
    define_mcp_connection,
    from_env,
)
from eve.connections.names import model_tool_name

__all__ = [
    "EnvValue",
    "IdentityProvider",
    "MCPConnection",
    "OAuth",
    "ToolFilter",
    "define_mcp_connection",
    "from_env",
    "identity_provider",
    "model_tool_name",
    "oauth",
]
