"""What agent authors write with; re-exported from ``eve`` and ``eve.tools``.

Internal: authors import these names from the public modules (``eve``, ``eve.tools``,
``eve.channels``, …; docs/architecture.md, "The public surface").
"""
