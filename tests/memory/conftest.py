"""The memory tests' PostgreSQL: the session tests' server, one fresh database per test."""

from tests.sessions.conftest import postgres_server, postgres_url

__all__ = ["postgres_server", "postgres_url"]
