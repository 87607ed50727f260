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

    @property
    def roles(self) -> frozenset[str]:
        """The roles it holds: the strings in ``claims["roles"]``."""
        return roles_of(self)

    def is_same(self, other: Principal | PrincipalRef | None) -> bool:
        """``other`` names this principal (the same id and kind)."""
        return other is not None and (other.id, other.kind) == (self.id, self.kind)


#: the principal of the server's shared bearer token (or of a loopback server without one)
OPERATOR = Principal(id="operator", kind="operator")


class PrincipalRef(msgspec.Struct, frozen=True, kw_only=True):
    """A principal named without its claims: what a session summary says of its owner and
    an ``input.resolved`` event of who answered. Never more than the id and the kind."""

    id: str
    kind: PrincipalKind


def ref_of(principal: Principal) -> PrincipalRef:
    return PrincipalRef(id=principal.id, kind=principal.kind)


def roles_of(principal: Principal) -> frozenset[str]:
    """The strings in ``claims["roles"]`` (a list of them, or one string)."""
    raw = principal.claims.get("roles")
    if isinstance(raw, str):
        return frozenset({raw})
    if isinstance(raw, list | tuple):
        return frozenset(role for role in raw if isinstance(role, str))
    return frozenset()


#: the operator, named: the owner of sessions an eve from before ownership created
OPERATOR_REF = ref_of(OPERATOR)
