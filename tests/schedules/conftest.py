"""The PostgreSQL fixtures of the session tests, for the schedules' two-worker test."""

from tests.sessions.conftest import postgres_schema, postgres_server, postgres_url

__all__ = ["postgres_schema", "postgres_server", "postgres_url"]
