"""The loopback provider server every adapter test talks to."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.models.sse_server import ScriptedServer


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


@pytest.fixture(autouse=True, scope="package")
def _provider_sdks() -> None:
    """The Anthropic SDK, loaded before this package's first test runs in a worker, not with
    the module (``eve/models/anthropic.py`` imports it as a client is made): every worker
    imports these modules as it collects, but only those that run them need the SDK, and a
    test that times a stream must not count its second of import."""
    import anthropic  # noqa: F401
