"""Shared code of the example agent; reached only through imports."""
