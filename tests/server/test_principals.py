"""Who asks, over every route of ``/eve/v1``: anonymous, the operator (shared token), a user
(a JWT of a real provider served in process), and each token eve refuses. Public routes stay
public; refusals say ``invalid_token`` for a bad JWT; channels get the same chain; neither a
token nor a claim reaches the log or an answer."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import pytest
from click.testing import CliRunner

from eve.auth.settings import OIDCSettings
from eve.channels.declaration import ChannelDeclaration
from eve.channels.kinds import KIND_MODULES
from eve.cli.main import main
from eve.errors import IdentityProviderUnavailable
from tests.conftest import AppFactory
from tests.oidc.provider import AUDIENCE, CLIENT_ID, Provider, new_key
from tests.sessions.apps import say, scripted_app
from tests.sessions.inprocess import InProcessServer
from tests.sessions.principals import OPERATOR_TOKEN, bearer, verifying

TOKEN = OPERATOR_TOKEN
#: a claim whose value must never be logged or answered
SECRET_CLAIM = "alice-private@example.test"
SESSION = "/session/s_missing"
#: every route of /eve/v1 that needs a principal: (method, path, body)
GUARDED: list[tuple[str, str, dict[str, object] | None]] = [
    ("GET", "/info", None),
    ("POST", "/session", {}),
    ("GET", "/sessions", None),
    ("POST", SESSION, {"message": "hi"}),
    ("GET", SESSION, None),
    ("POST", SESSION + "/cancel", None),
    ("POST", SESSION + "/reset", None),
    ("POST", SESSION + "/compact", None),
    ("GET", SESSION + "/stream?follow=false", None),
    ("POST", SESSION + "/tasks/t1/events", {"name": "go"}),
]
PUBLIC = ["/health", "/auth/config"]

Credentials = Callable[[Provider], dict[str, str]]


#: how each caller authenticates, and whether eve takes it for a bad token
REFUSED: dict[str, tuple[Credentials, str]] = {
    "anonymous": (lambda p: {}, "unauthorized"),
    "wrong-shared-token": (lambda p: bearer(TOKEN[:-1] + "x"), "unauthorized"),
    "expired": (lambda p: bearer(p.token(expires_in=-300)), "invalid_token"),
    "wrong-audience": (lambda p: bearer(p.token(audience="https://other")), "invalid_token"),
    "wrong-issuer": (lambda p: bearer(p.token(issuer="https://evil.test")), "invalid_token"),
    "unknown-key": (lambda p: bearer(p.token(key=new_key())), "invalid_token"),
    "tampered": (lambda p: bearer(p.token()[:-6] + "AAAAAA"), "invalid_token"),
}


@pytest.fixture
def provider() -> Provider:
    return Provider()


@pytest.fixture
def server(
    make_app: AppFactory, provider: Provider, monkeypatch: pytest.MonkeyPatch
) -> Iterator[InProcessServer]:
    monkeypatch.setitem(KIND_MODULES, "whoami", "tests.server.whoami_kind")
    server = verifying(
        scripted_app(make_app, [say("hi")]),
        provider,
        channels=[ChannelDeclaration(name="me", kind="whoami", path="/channels/me")],
    ).start()
    yield server
    server.stop()


def _send(server: InProcessServer, method: str, path: str, body: object, headers: dict[str, str]):  # type: ignore[no-untyped-def]
    return server.request(method, path, headers=headers, **({"json": body} if body else {}))


def test_every_route_refuses_each_caller_eve_cannot_verify(
    server: InProcessServer, provider: Provider, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    sent: list[str] = []
    for name, (credentials, code) in REFUSED.items():
        headers = credentials(provider)
        sent += [value.removeprefix("Bearer ") for value in headers.values()]
        for method, path, body in GUARDED:
            response = _send(server, method, path, body, headers)
            assert response.status_code == 401, (name, method, path)
            assert response.json()["code"] == code, (name, path)
            expected = 'Bearer error="invalid_token"' if code == "invalid_token" else "Bearer"
            assert response.headers["www-authenticate"] == expected
            assert all(token not in response.text for token in sent)
        for path in PUBLIC:
            assert server.request("GET", path, headers=headers).status_code == 200, (name, path)
        channel = server._client().get("/channels/me/whoami", headers=headers)
        assert (channel.status_code, channel.json()["code"]) == (401, code), name
    log = server.stop() + caplog.text
    assert all(token not in log for token in sent)


def test_the_operator_and_a_user_pass_every_route(
    server: InProcessServer, provider: Provider, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    user_token = provider.token("alice", email=SECRET_CLAIM, roles=["finance"])
    callers = {"operator": bearer(TOKEN), "user": bearer(user_token)}
    for name, headers in callers.items():
        for method, path, body in GUARDED:
            response = _send(server, method, path, body, headers)
            assert response.status_code not in (401, 403, 500, 503), (name, method, path)
            assert SECRET_CLAIM not in response.text and user_token not in response.text
    http = server._client()
    assert http.get("/channels/me/whoami", headers=bearer(TOKEN)).json()["kind"] == "operator"
    me = http.get("/channels/me/whoami", headers=bearer(user_token)).json()
    assert (me["id"], me["kind"]) == (f"{provider.issuer}#alice", "user")
    log = server.stop() + caplog.text
    assert user_token not in log and SECRET_CLAIM not in log


def test_a_rotated_key_is_fetched_and_tokens_of_the_dropped_key_refused(
    server: InProcessServer, provider: Provider
) -> None:
    old = provider.token()
    assert server.get("/sessions", headers=bearer(old)).status_code == 200
    provider.rotate("ES256")
    assert server.get("/sessions", headers=bearer(provider.token())).status_code == 200
    assert provider.jwks_fetches == 2
    refused = server.get("/sessions", headers=bearer(old))
    assert refused.status_code == 401 and refused.json()["code"] == "invalid_token"


def test_an_issuer_down_when_keys_must_be_fetched_is_a_503(
    server: InProcessServer, provider: Provider
) -> None:
    rotated = provider.rotate()
    provider.down = True
    response = server.get("/sessions", headers=bearer(provider.token(key=rotated)))
    assert response.status_code == 503
    assert response.json()["code"] == "identity_provider_unavailable"
    assert server.get("/sessions", headers=bearer(TOKEN)).status_code == 200


def test_the_auth_config_tells_the_ui_the_issuer_and_nothing_secret(
    server: InProcessServer, provider: Provider
) -> None:
    answer = server.get("/auth/config", headers={}).json()
    assert answer["oidc"] == {
        "issuer": provider.issuer,
        "clientId": CLIENT_ID,
        "authorizationEndpoint": provider.issuer + "/authorize",
        "tokenEndpoint": provider.issuer + "/token",
        "audience": AUDIENCE,
        "scope": "openid profile",
    }
    page = server._client().get("/")
    assert f"connect-src 'self' {provider.issuer}" in page.headers["content-security-policy"]
    assert TOKEN not in str(answer)


def test_a_server_whose_issuer_is_down_does_not_start(
    make_app: AppFactory, provider: Provider
) -> None:
    provider.down = True
    server = InProcessServer(
        make_app(),
        oidc=OIDCSettings(issuer=provider.issuer, audience=AUDIENCE),
        oidc_transport=provider.transport(),
    )
    with pytest.raises(IdentityProviderUnavailable, match="discovery document cannot be fetched"):
        server.start()


def test_eve_serve_stops_with_exit_2_when_the_issuer_is_unreachable(make_app: AppFactory) -> None:
    root = make_app()
    args = ["-C", str(root), "serve", "--port", "0", "--model", "offline/test"]
    issuer = ["--auth-issuer", "http://127.0.0.1:9", "--auth-audience", "api"]
    result = CliRunner().invoke(main, [*args, *issuer])
    assert result.exit_code == 2, result.output
    assert "http://127.0.0.1:9/.well-known/openid-configuration" in result.output
    half = CliRunner().invoke(main, [*args, "--auth-issuer", "https://id.example"])
    assert half.exit_code == 2 and "EVE_AUTH_AUDIENCE is not" in half.output
