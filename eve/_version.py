"""The installed eve version, written into compile metadata."""

__version__ = "0.2.0"
