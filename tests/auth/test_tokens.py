"""Bearer JWTs checked against a real provider's keys: what is accepted, what is refused and
why (never quoting the token), key rotation and the rate-limited refetch of the keys."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from collections.abc import Awaitable
from typing import Any, TypeVar

import jwt
import pytest
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from eve.auth.issuer_keys import IssuerKeys
from eve.auth.settings import OIDCSettings, oidc_settings
from eve.auth.tokens import TokenVerifier
from eve.errors import AuthConfigInvalid, IdentityProviderUnavailable, InvalidToken
from tests.oidc.provider import AUDIENCE, Provider, new_key

T = TypeVar("T")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def run(awaitable: Awaitable[T]) -> T:
    async def wrap() -> T:
        return await awaitable

    return asyncio.run(wrap())


def verifier_for(provider: Provider, clock: Clock | None = None, **settings: Any) -> TokenVerifier:
    oidc = OIDCSettings(issuer=provider.issuer, audience=AUDIENCE, **settings)
    keys = IssuerKeys(oidc, transport=provider.transport(), clock=clock or Clock())
    return TokenVerifier(oidc, keys)


def test_a_valid_token_is_a_user_with_its_claims_and_roles() -> None:
    provider = Provider()
    verifier = verifier_for(provider)
    principal = run(verifier.verify(provider.token("bob", roles=["finance", 7], email="b@x")))
    assert principal.kind == "user"
    assert principal.id == f"{provider.issuer}#bob"
    assert principal.claims["roles"] == ["finance"]
    assert principal.claims["email"] == "b@x"


def test_roles_come_from_the_configured_claim_dotted_or_space_separated() -> None:
    provider = Provider()
    nested = verifier_for(provider, roles_claim="realm_access.roles")
    token = provider.token(realm_access={"roles": ["admin"]}, roles=["ignored"])
    assert run(nested.verify(token)).claims["roles"] == ["admin"]
    scoped = verifier_for(provider, roles_claim="scope")
    assert run(scoped.verify(provider.token(scope="read write"))).claims["roles"] == [
        "read",
        "write",
    ]
    assert run(verifier_for(provider).verify(provider.token())).claims["roles"] == []


def test_an_es256_key_verifies_too() -> None:
    provider = Provider(keys=[new_key("ES256")])
    assert run(verifier_for(provider).verify(provider.token())).kind == "user"


def _tampered(token: str) -> str:
    header, payload, signature = token.split(".")
    claims = json.loads(jwt.utils.base64url_decode(payload))
    claims["sub"] = "mallory"
    forged = jwt.utils.base64url_encode(json.dumps(claims).encode()).decode()
    return f"{header}.{forged}.{signature}"


def _unsigned(provider: Provider) -> str:
    return jwt.encode(
        {"iss": provider.issuer, "sub": "x", "aud": AUDIENCE, "exp": 2**40},
        key=None,
        algorithm="none",
        headers={"kid": provider.keys[0].kid},
    )


def _hs256_with_public_key(provider: Provider) -> str:
    # the classic confusion: HMAC keyed with the issuer's public key, which anyone can fetch
    # (signed by hand: PyJWT itself refuses to use a public key as an HMAC secret)
    public = provider.keys[0].private.public_key()
    pem = public.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    header = {"alg": "HS256", "typ": "JWT", "kid": provider.keys[0].kid}
    claims = {"iss": provider.issuer, "sub": "x", "aud": AUDIENCE, "exp": 2**40}
    signing_input = b".".join(
        jwt.utils.base64url_encode(json.dumps(part).encode()) for part in (header, claims)
    )
    signature = hmac.new(pem, signing_input, hashlib.sha256).digest()
    return (signing_input + b"." + jwt.utils.base64url_encode(signature)).decode()


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda p: p.token(expires_in=-120), "expired"),
        (lambda p: p.token(not_before=120), "not valid yet"),
        (lambda p: p.token(audience="https://other.app"), "another audience"),
        (lambda p: p.token(issuer="https://evil.example"), "another issuer"),
        (lambda p: p.token(key=new_key()), "a key the issuer does not publish"),
        (lambda p: _tampered(p.token()), "signature does not verify"),
        (_unsigned, "which eve refuses"),
        (_hs256_with_public_key, "which eve refuses"),
        (lambda p: "not.a.jwt", "not a valid JWT"),
    ],
    ids=[
        "expired",
        "nbf",
        "audience",
        "issuer",
        "unknown-key",
        "tampered",
        "none",
        "hs256",
        "garbage",
    ],
)
def test_a_token_eve_refuses_is_an_invalid_token_that_quotes_nothing(
    make: Any, reason: str
) -> None:
    provider = Provider()
    token = make(provider)
    with pytest.raises(InvalidToken) as raised:
        run(verifier_for(provider).verify(token))
    message = str(raised.value)
    assert reason in message
    assert token not in message and provider.issuer not in message
    assert all(part not in message for part in token.split(".") if len(part) > 8)


def test_the_clock_skew_within_the_leeway_is_accepted() -> None:
    provider = Provider()
    assert run(verifier_for(provider).verify(provider.token(expires_in=-10))).kind == "user"


def test_a_rotated_key_is_fetched_and_the_dropped_one_refused() -> None:
    provider = Provider()
    clock = Clock()
    verifier = verifier_for(provider, clock)
    old = provider.token()
    assert run(verifier.verify(old)).kind == "user"
    provider.rotate()
    clock.now += 31  # past the refetch interval
    assert run(verifier.verify(provider.token())).kind == "user"
    assert provider.jwks_fetches == 2
    with pytest.raises(InvalidToken, match="does not publish"):
        run(verifier.verify(old))


def test_unknown_kids_refetch_the_keys_at_most_once_per_interval() -> None:
    provider = Provider()
    clock = Clock()
    verifier = verifier_for(provider, clock)
    run(verifier.start())
    strangers = [provider.token(key=new_key()) for _ in range(3)]

    async def flood() -> None:
        for token in strangers:
            with pytest.raises(InvalidToken):
                await verifier.verify(token)

    run(flood())
    assert provider.jwks_fetches == 1  # the start's fetch, none for the made-up kids
    clock.now += 30
    run(flood())
    assert provider.jwks_fetches == 2


def test_an_unreachable_issuer_is_a_named_error_at_start_and_at_refetch() -> None:
    provider = Provider(down=True)
    with pytest.raises(IdentityProviderUnavailable) as raised:
        run(verifier_for(provider).start())
    assert raised.value.url.endswith("/.well-known/openid-configuration")
    assert (raised.value.exit_code, raised.value.http_status) == (2, 503)
    provider.down = False
    clock = Clock()
    verifier = verifier_for(provider, clock)
    run(verifier.start())
    rotated = provider.rotate()
    provider.down = True
    clock.now += 60
    with pytest.raises(IdentityProviderUnavailable):
        run(verifier.verify(provider.token(key=rotated)))


def test_a_discovery_document_of_another_issuer_is_refused() -> None:
    provider = Provider()
    oidc = OIDCSettings(issuer="http://localhost:9", audience=AUDIENCE)
    keys = IssuerKeys(oidc, transport=provider.transport())
    with pytest.raises(IdentityProviderUnavailable, match="names the issuer"):
        run(keys.start())


@pytest.mark.parametrize(
    ("given", "setting"),
    [
        ({"issuer": "https://id.example"}, "EVE_AUTH_AUDIENCE"),
        ({"audience": "api"}, "EVE_AUTH_ISSUER"),
        ({"issuer": "http://id.example", "audience": "api"}, "EVE_AUTH_ISSUER"),
        (
            {"issuer": "https://id.example", "audience": "api", "roles_claim": " "},
            "EVE_AUTH_ROLES_CLAIM",
        ),
    ],
)
def test_settings_that_cannot_work_are_refused(given: dict[str, str], setting: str) -> None:
    with pytest.raises(AuthConfigInvalid) as raised:
        oidc_settings(env={}, **given)
    assert raised.value.setting == setting


def test_settings_come_from_the_environment_and_options_win() -> None:
    env = {"EVE_AUTH_ISSUER": "https://a.example", "EVE_AUTH_AUDIENCE": "api"}
    assert oidc_settings(env={}) is None
    read = oidc_settings(env=env)
    assert read is not None and read.issuer == "https://a.example" and read.roles_claim == "roles"
    given = oidc_settings(issuer="http://127.0.0.1:8080", client_id="ui", env=env)
    assert given is not None and given.issuer == "http://127.0.0.1:8080" and given.client_id == "ui"


def test_a_verified_token_is_remembered_only_until_it_expires() -> None:
    provider = Provider()
    clock = Clock()
    clock.now = 0.0
    oidc = OIDCSettings(issuer=provider.issuer, audience=AUDIENCE)
    verifier = TokenVerifier(oidc, IssuerKeys(oidc, transport=provider.transport()), clock=clock)
    checks: list[str] = []
    check = verifier._check

    async def counted(token: str) -> Any:
        checks.append(token)
        return await check(token)

    verifier._check = counted  # type: ignore[method-assign]
    token = provider.token(expires_in=60)
    for _ in range(3):
        run(verifier.verify(token))
    assert len(checks) == 1
    clock.now = float(jwt.decode(token, options={"verify_signature": False})["exp"]) + 31
    run(verifier.verify(token))  # past exp + leeway by this clock: checked again
    assert len(checks) == 2
