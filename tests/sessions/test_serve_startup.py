"""``eve serve`` refuses a socket it cannot have with one ``eve:`` line and exit 2."""

from __future__ import annotations

import os
import socket
import sys

from tests import forked
from tests.conftest import AppFactory
from tests.sessions.apps import say, scripted_app


def test_a_port_in_use_is_a_config_error(make_app: AppFactory) -> None:
    root = scripted_app(make_app, [say("hi")])
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = forked.run(
            [sys.executable, "-m", "eve", "serve", "--port", str(port)],
            cwd=root,
            env=dict(os.environ),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    assert done.returncode == 2, done.stderr
    assert f"eve: cannot listen on 127.0.0.1:{port}: address already in use;" in done.stderr
    assert "choose another --port" in done.stderr
    assert "Traceback" not in done.stderr
