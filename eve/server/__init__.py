"""The HTTP session API (Starlette): ``create_app`` builds it, ``eve serve`` runs it, and
``eve_app`` builds it to mount in another ASGI app."""

from eve.server.app import ServerOptions, create_app, service_for
from eve.server.embed import EveApp, eve_app

__all__ = ["EveApp", "ServerOptions", "create_app", "eve_app", "service_for"]
