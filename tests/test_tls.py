"""The TLS context eve's HTTP clients share (eve/_tls.py): one per process and library, and
it still verifies a server's certificate, against a real TLS server on loopback."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from mcp.shared._httpx_utils import create_mcp_http_client

from eve._tls import HttpLibrary, shared_tls_context
from eve.client import AsyncEveClient, EveClient
from eve.connections.transports import _http_client
from eve.errors import ModelConnectionError, ServerNotTrusted, ServerUnreachable
from eve.manifest import Retries
from eve.messages import user_message
from eve.models.anthropic import AnthropicModel
from eve.models.base import ModelRequest
from eve.models.events import TextDelta
from eve.models.openai import OpenAIModel
from tests.models.anthropic_script import end, start, text_block
from tests.models.sse_server import ScriptedServer, anthropic_sse

LOOPBACK = ipaddress.ip_address("127.0.0.1")


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 that signs itself, and its key: no CA bundle holds it."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "eve test")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(LOOPBACK)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "server.pem", directory / "server.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@pytest.fixture
def certificate(tmp_path: Path) -> Path:
    return self_signed(tmp_path)[0]


@pytest.fixture
def tls_server(certificate: Path) -> Iterator[ScriptedServer]:
    """A scripted Messages API server speaking TLS with the self-signed certificate."""
    serving = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    serving.load_cert_chain(certificate, certificate.with_suffix(".key"))
    with ScriptedServer(tls=serving) as server:
        yield server


@pytest.fixture
def fresh_contexts() -> Iterator[None]:
    """The shared contexts made anew in the test and after it, so that what the test sets
    (``SSL_CERT_FILE``) reaches them and leaves none behind for later tests."""
    shared_tls_context.cache_clear()
    yield
    shared_tls_context.cache_clear()


def _context_of(http_client: Any) -> ssl.SSLContext:
    # httpx and httpx2 keep the context in their transport's connection pool
    context: ssl.SSLContext = http_client._transport._pool._ssl_context
    return context


def _sdk_client(model: AnthropicModel | OpenAIModel) -> Any:
    """The SDK client a model makes in a new event loop (``LoopBoundClient``)."""

    async def made() -> Any:
        return model._sdk()

    return asyncio.run(made())


def test_eve_clients_share_one_context_per_http_library() -> None:
    httpx_context = shared_tls_context("httpx")
    with EveClient("https://example.invalid") as first, EveClient("http://127.0.0.1:1") as second:
        assert _context_of(first._http) is _context_of(second._http) is httpx_context
    other = AsyncEveClient("https://example.invalid")
    assert _context_of(other._http) is httpx_context
    asyncio.run(other.aclose())

    httpx2_context = shared_tls_context("httpx2")
    assert httpx2_context is not httpx_context
    anthropic = AnthropicModel("claude-test", api_key="k", base_url="https://example.invalid")
    openai = OpenAIModel("gpt-test", api_key="k", base_url="https://example.invalid/v1")
    # a client per event loop: each new one uses the same context
    clients = [_sdk_client(anthropic), _sdk_client(anthropic), _sdk_client(openai)]
    assert len({id(client) for client in clients}) == 3
    assert all(_context_of(client._client) is httpx2_context for client in clients)


async def test_an_mcp_http_connection_shares_it_with_the_sdks_timeouts() -> None:
    async with _http_client({}, None) as ours, create_mcp_http_client() as sdks:
        assert _context_of(ours) is shared_tls_context("httpx2")
        assert ours.timeout == sdks.timeout
        assert ours.follow_redirects == sdks.follow_redirects


def _handshake(context: ssl.SSLContext, url: str) -> None:
    host, port = url.removeprefix("https://").split(":")
    with (
        socket.create_connection((host, int(port)), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname=host),
    ):
        pass


@pytest.mark.usefixtures("fresh_contexts")
@pytest.mark.parametrize("library", ["httpx", "httpx2"])
def test_each_librarys_context_verifies_and_trusts_ssl_cert_file(
    library: HttpLibrary,
    tls_server: ScriptedServer,
    certificate: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ssl.SSLCertVerificationError, match="CERTIFICATE_VERIFY_FAILED"):
        _handshake(shared_tls_context(library), tls_server.url)
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate))
    shared_tls_context.cache_clear()
    _handshake(shared_tls_context(library), tls_server.url)


def _hello() -> ModelRequest:
    return ModelRequest(system="", messages=[user_message("hi")], retries=Retries(attempts=1))


def _hello_reply() -> Any:
    return anthropic_sse([start(), *text_block(0, "hello"), *end("end_turn")])


async def _text(model: AnthropicModel) -> str:
    events = [event async for event in model.stream(_hello())]
    return "".join(e.text for e in events if isinstance(e, TextDelta))


@pytest.mark.usefixtures("fresh_contexts")
async def test_a_model_refuses_a_certificate_no_ca_signed(tls_server: ScriptedServer) -> None:
    model = AnthropicModel("claude-test", api_key="k", base_url=tls_server.url)
    with pytest.raises(ModelConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
        await _text(model)
    assert tls_server.requests == []  # the handshake failed: no request was made


@pytest.mark.usefixtures("fresh_contexts")
async def test_a_model_trusts_a_certificate_in_ssl_cert_file(
    tls_server: ScriptedServer, certificate: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate))
    tls_server.add(_hello_reply())
    model = AnthropicModel("claude-test", api_key="k", base_url=tls_server.url)
    assert await _text(model) == "hello"
    assert [r.path for r in tls_server.requests] == ["/v1/messages"]


def test_a_server_whose_certificate_is_not_trusted_is_named_so_at_once(
    tls_server: ScriptedServer,
) -> None:
    """``health`` is repeatable (tried again while the server is away); a refused
    certificate is not the server away, and no retry makes it trusted (before, the client
    retried until its reconnect_timeout and said the server did not answer)."""
    with (
        EveClient(tls_server.url, reconnect_timeout=5) as client,
        pytest.raises(ServerNotTrusted) as raised,
    ):
        client.health()
    assert "self-signed certificate" in str(raised.value)
    assert "SSL_CERT_FILE" in str(raised.value)
    assert isinstance(raised.value, ServerUnreachable)
    assert tls_server.requests == []
