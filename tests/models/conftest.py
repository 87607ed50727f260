"""The loopback provider server every adapter test talks to."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.models.sse_server import ScriptedServer


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running
