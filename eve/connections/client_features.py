"""What eve offers an MCP server besides calling its tools: who eve is, its roots,
progress, and answers to its elicitation and sampling requests.

- ``clientInfo`` names eve and its version, not the SDK's default, so a server's logs say
  which client called.
- Roots (https://modelcontextprotocol.io/specification/2025-06-18/client/roots): the agent's
  workspace, the one directory its file tools may touch, so a server that works on files
  is told the same boundary. One connection serves every session of a worker process, and
  every session of an app shares its workspace, so the roots belong to the connection and
  the pool updates them from each listing and call.
- Progress: a call passes a callback that turns each ``notifications/progress`` of that
  request into an ``action.partial`` of the tool call (``report``, given by the turn).

- Elicitation and sampling: answered for the call running on the connection, by a person
  and by the agent's model (``connections.asking``); sampling is offered only when the
  connection's policy allows it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import mcp_types
from mcp.client.session import ClientRequestContext
from mcp.shared.dispatcher import ProgressFnT

from eve._version import __version__
from eve.connections.asking import RunningCalls
from eve.manifest import ConnectionEntry
from eve.runtime.partials import Report

CLIENT_INFO = mcp_types.Implementation(name="eve", version=__version__)


class ClientFeatures:
    """One connection's client side: the callbacks its ``ClientSession`` is given."""

    def __init__(self, entry: ConnectionEntry) -> None:
        self.roots: tuple[Path, ...] = ()
        #: the calls out on the connection, whose turns answer the server's requests
        self.running = RunningCalls(
            entry.name, policy=entry.sampling, max_tokens=entry.sampling_max_tokens
        )

    def set_roots(self, roots: Sequence[Path]) -> None:
        # every call sets them: kept as given, resolved only when a server asks
        self.roots = tuple(roots)

    def session_options(self) -> dict[str, Any]:
        """The ``ClientSession`` keywords: eve's name and version, its roots, and the
        callbacks of elicitation and (when allowed) sampling."""
        return {
            "client_info": CLIENT_INFO,
            "list_roots_callback": self.list_roots,
            **self.running.session_options(),
        }

    async def list_roots(self, context: ClientRequestContext) -> mcp_types.ListRootsResult:
        return mcp_types.ListRootsResult(
            roots=[
                mcp_types.Root(uri=root.as_uri(), name=root.name or str(root))  # type: ignore[arg-type]
                for root in (path.resolve() for path in self.roots)
            ]
        )


def progress_callback(report: Report | None) -> ProgressFnT | None:
    """A call's ``progress_callback``: each notification as a partial of the tool call,
    ``{"progress": 3, "total": 10, "message": "…"}`` (``total`` and ``message`` when given)."""
    if report is None:
        return None

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        partial: dict[str, Any] = {"progress": progress}
        if total is not None:
            partial["total"] = total
        if message:
            partial["message"] = message
        await report(partial)

    return on_progress
