"""The ``eve`` command line."""

from eve.cli.main import main

__all__ = ["main"]
