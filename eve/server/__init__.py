"""The HTTP session API (Starlette): ``create_app`` builds it, ``eve serve`` runs it."""

from eve.server.app import ServerOptions, create_app, service_for

__all__ = ["ServerOptions", "create_app", "service_for"]
