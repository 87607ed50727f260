"""What a running server serves against what is on disk now: ``eve serve`` and ``eve dev
--web`` load the agent once, so an edited tool is not served until a restart. The server
says so, in ``GET /eve/v1/info`` (``served_stale_sources``) and once per change in its log,
rather than serve the old code while the files say otherwise."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path

from eve.artifacts import hash_sources, source_changes

log = logging.getLogger("eve.server")


class SourceWatch:
    """The agent's sources as the server loaded them, and which changed since."""

    def __init__(self, app_root: Path) -> None:
        self.app_root = app_root
        self.loaded = hash_sources(app_root)
        self._told: list[str] = []

    def changed(self) -> list[str]:
        """Sources added, removed or edited since the server loaded the agent, sorted."""
        added, removed, changed = source_changes(self.loaded, hash_sources(self.app_root))
        return sorted([*added, *removed, *changed])

    async def watch(self, every_seconds: float) -> None:
        """Log one line each time the set of changed sources changes."""
        while True:
            await asyncio.sleep(every_seconds)
            with contextlib.suppress(OSError):  # a file mid-save: look again next time
                changed = await asyncio.to_thread(self.changed)
                if changed and changed != self._told:
                    shown = ", ".join(changed[:5]) + (" …" if len(changed) > 5 else "")
                    log.warning(
                        "eve: %s changed since this server loaded the agent; it still serves "
                        "what it loaded: restart it to serve the change",
                        shown,
                    )
                self._told = changed
