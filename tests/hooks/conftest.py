"""Fixtures of the hooks tests: ``site``, a directory plugins are installed into."""

from tests.hooks.installed import site

__all__ = ["site"]
