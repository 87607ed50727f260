"""What agent authors write with; re-exported from ``eve`` and ``eve.tools``."""
