"""An ``ag_ui`` channel served by uvicorn on a loopback port, for the Node client.

``ThreadedServer`` with the channel mounted and the server's bearer token set; while it
runs, the working directory is the app root (the test tools write their marker files
there) and the worker id is fixed, so a server started again on the same root recovers
the turns the stopped one left running.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from eve.channels.declaration import ChannelDeclaration
from tests.sessions.threaded import ThreadedServer

TOKEN = "ag-ui-channel-test-token"
CHANNEL_PATH = "/channels/copilot"
CHANNEL = ChannelDeclaration(name="copilot", kind="ag_ui", path=CHANNEL_PATH)


@dataclass
class ChannelServer(ThreadedServer):
    token: str | None = TOKEN
    channels: list[ChannelDeclaration] = field(default_factory=lambda: [CHANNEL])
    base: str = ""
    _cwd: Path | None = None
    _saved: dict[str, str | None] = field(default_factory=dict)

    @property
    def channel_url(self) -> str:
        return self.base + CHANNEL_PATH

    def start(self) -> str:
        self._cwd = Path.cwd()
        self._saved = {"EVE_WORKER_ID": os.environ.get("EVE_WORKER_ID")}
        os.environ["EVE_WORKER_ID"] = "ag-ui-test-worker"
        os.chdir(self.app_root)
        self._done.clear()
        self._uvicorn = None
        self.base = super().start()
        return self.base

    def stop(self) -> None:
        if self._uvicorn is not None:
            # a run's stream stays open while its turn runs: drop it, as a dying server
            # would, instead of waiting for it to end
            self._uvicorn.force_exit = True
        try:
            super().stop()
        finally:
            if self._cwd is not None:
                os.chdir(self._cwd)
            for name, value in self._saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
