"""Channels: the doors to an agent (``agent/channels/<name>.py``)."""
