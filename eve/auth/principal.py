"""A principal: who made a request, as the server verified it."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

#: ``operator``: the holder of the server's shared token, who may see and do everything;
#: ``user``: a person, from a verified token or a custom auth hook; ``channel``: a caller
#: known through a channel's own scheme (a Slack user, an A2A or MCP client)
PrincipalKind = Literal["operator", "user", "channel"]


class Principal(msgspec.Struct, frozen=True, kw_only=True):
    """Who a request comes from. ``id`` is stable for the same caller across requests:
    sessions record it as their owner."""

    id: str
    kind: PrincipalKind
    #: the verified claims it was made from (a token's, a channel's); never secrets
    claims: dict[str, Any] = msgspec.field(default_factory=dict)

    @property
    def is_operator(self) -> bool:
        return self.kind == "operator"


#: the principal of the server's shared bearer token (or of a loopback server without one)
OPERATOR = Principal(id="operator", kind="operator")
