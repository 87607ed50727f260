"""The loopback provider server every adapter test talks to."""

from __future__ import annotations

import functools
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


@pytest.fixture(autouse=True, scope="package")
def _one_botocore_loader() -> Iterator[None]:
    """One botocore data loader per worker, not one per boto3 session: eve makes a session
    per Bedrock model, and each new loader parsed the service's JSON models again, most of
    the CPU of a Bedrock test (0.15 s of it). The files and the clients made from them are
    the same; only the parsing is shared."""
    import botocore.session
    from botocore.loaders import create_loader

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(botocore.session, "create_loader", functools.cache(create_loader))
        yield
