"""Who is asking: the principal of a request, and how a server learns it."""

from eve.auth.principal import OPERATOR, Principal, PrincipalKind

__all__ = ["OPERATOR", "Principal", "PrincipalKind"]
