"""eve.server.auth: the token a public bind needs, and how a sent token is compared."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.requests import Request

from eve.auth import OPERATOR
from eve.cli.main import main
from eve.errors import ServerConfigError, Unauthorized
from eve.server.auth import (
    ANONYMOUS_PATHS,
    MIN_PUBLIC_TOKEN_LENGTH,
    ServerAuth,
    require_token_for,
    route_path,
)

STRONG = "t" * MIN_PUBLIC_TOKEN_LENGTH


@pytest.mark.parametrize("token", [None, "", "a", "x" * (MIN_PUBLIC_TOKEN_LENGTH - 1)])
def test_a_public_bind_refuses_a_missing_or_short_token(token: str | None) -> None:
    with pytest.raises(ServerConfigError) as raised:
        require_token_for("0.0.0.0", token)
    assert f"{MIN_PUBLIC_TOKEN_LENGTH} characters or more" in str(raised.value)
    if token:
        assert f"is {len(token)} characters" in str(raised.value)
    if token and len(token) > 1:
        assert token not in str(raised.value)  # never repeated in the message


def test_a_public_bind_accepts_a_long_token_and_loopback_needs_none() -> None:
    require_token_for("0.0.0.0", STRONG)
    require_token_for("::", STRONG)
    for host in ("127.0.0.1", "localhost", "::1"):
        require_token_for(host, None)
        require_token_for(host, "a")


def test_eve_serve_refuses_a_one_letter_token_on_a_public_bind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # issue 12, finding 10: EVE_API_TOKEN=a was accepted for --host 0.0.0.0
    monkeypatch.setenv("EVE_API_TOKEN", "a")
    result = CliRunner().invoke(main, ["-C", str(tmp_path), "serve", "--host", "0.0.0.0"])
    assert result.exit_code == ServerConfigError.exit_code == 2
    assert "EVE_API_TOKEN is 1 characters, shorter than 32" in result.output


def _request(authorization: bytes) -> Request:
    # Starlette decodes header bytes as Latin-1, as a real ASGI server hands them over
    scope = {
        "type": "http",
        "method": "GET",
        "path": "/eve/v1/sessions",
        "headers": [(b"authorization", authorization)],
    }
    return Request(scope)


def authorized(request: Request, token: str) -> bool:
    try:
        return asyncio.run(ServerAuth(token=token).authenticate(request)) == OPERATOR
    except Unauthorized:
        return False


def test_a_non_ascii_token_matches_its_utf8_bytes() -> None:
    token = "clé-секрет-令牌-" + STRONG
    assert authorized(_request(b"Bearer " + token.encode("utf-8")), token)
    assert not authorized(_request(b"Bearer " + token.encode("utf-8")[:-1]), token)
    assert not authorized(_request(b"Bearer " + token.encode("latin-1", "replace")), token)


def test_an_ascii_token_is_the_operator_only_as_a_bearer() -> None:
    assert authorized(_request(b"Bearer " + STRONG.encode()), STRONG)
    assert authorized(_request(b"bearer " + STRONG.encode()), STRONG)
    assert not authorized(_request(b"Basic " + STRONG.encode()), STRONG)
    assert not authorized(_request(b""), STRONG)


def test_a_public_bind_may_go_without_a_token_when_users_are_verified() -> None:
    require_token_for("0.0.0.0", None, verifies_users=True)
    with pytest.raises(ServerConfigError, match="is 1 characters"):
        require_token_for("0.0.0.0", "a", verifies_users=True)  # a weak token is still weak
    with pytest.raises(ServerConfigError, match="no OIDC issuer"):
        require_token_for("0.0.0.0", None)


@pytest.mark.parametrize(
    ("path", "public"),
    [
        ("/agent/eve/v1/health", True),
        ("/agent/eve/v1/info", False),
        ("/agentx/eve/v1/health", False),  # not below the mount point: not its health route
    ],
)
def test_health_is_public_below_a_mount_point(path: str, public: bool) -> None:
    # mounted under /agent, Starlette hands the app the full path and root_path="/agent"
    scope = {"type": "http", "method": "GET", "path": path, "root_path": "/agent", "headers": []}
    assert (route_path(Request(scope)) in ANONYMOUS_PATHS) is public
