"""Who is asking: the principal of a request, and how a server learns it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eve._lazy import lazy_attributes
from eve.auth.principal import OPERATOR, Principal, PrincipalKind

if TYPE_CHECKING:
    from eve.authoring.auth import AuthDefinition, define_auth

__all__ = ["OPERATOR", "AuthDefinition", "Principal", "PrincipalKind", "define_auth"]

# authoring names load on first use: the server imports this package on every start
__getattr__ = lazy_attributes(
    __name__, {"AuthDefinition": "eve.authoring.auth", "define_auth": "eve.authoring.auth"}
)
