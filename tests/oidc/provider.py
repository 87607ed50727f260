"""A small, real OIDC provider for the tests: discovery, JWKS, RS256/ES256-signed tokens,
``/authorize`` (authorization code + PKCE S256, auto-approving one test user) and
``/token`` (checks the code verifier and the redirect URI), key rotation and expiry.

It is a Starlette app: served in process through ``transport()`` (an httpx ASGI transport
eve's key fetcher takes), or on a loopback port in a thread (``serve()``) for a browser.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import httpx
import jwt
import uvicorn
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

AUDIENCE = "https://eve.test/api"
CLIENT_ID = "eve-dev-ui"
#: the user ``/authorize`` signs in without asking
USER = "alice"
#: every response may be read by a page of any origin: the dev UI redeems its code here
CORS = {"access-control-allow-origin": "*"}


@dataclass
class SigningKey:
    kid: str
    algorithm: str
    private: Any

    def jwk(self) -> dict[str, Any]:
        algorithm = jwt.get_algorithm_by_name(self.algorithm)
        public = json.loads(algorithm.to_jwk(self.private.public_key()))
        return {**public, "kid": self.kid, "alg": self.algorithm, "use": "sig"}


def new_key(algorithm: str = "RS256") -> SigningKey:
    private: Any = (
        rsa.generate_private_key(public_exponent=65537, key_size=2048)
        if algorithm == "RS256"
        else ec.generate_private_key(ec.SECP256R1())
    )
    return SigningKey(kid=secrets.token_hex(8), algorithm=algorithm, private=private)


@dataclass
class _Grant:
    challenge: str
    redirect_uri: str
    client_id: str


@dataclass
class Provider:
    """The provider at ``issuer``; ``keys`` are what its JWKS publishes."""

    issuer: str = "http://127.0.0.1:9"
    keys: list[SigningKey] = field(default_factory=lambda: [new_key()])
    #: seconds an access token from ``/token`` lives
    token_seconds: int = 300
    #: how often the JWKS was fetched
    jwks_fetches: int = 0
    #: ``/token`` and ``/.well-known`` answer 503 while set (an outage)
    down: bool = False
    _grants: dict[str, _Grant] = field(default_factory=dict)

    # --- tokens -------------------------------------------------------------------------

    def token(
        self,
        sub: str = USER,
        *,
        audience: str = AUDIENCE,
        issuer: str | None = None,
        expires_in: int = 300,
        not_before: int | None = None,
        key: SigningKey | None = None,
        **claims: Any,
    ) -> str:
        now = int(time.time())
        key = key or self.keys[0]
        payload = {
            "iss": issuer or self.issuer,
            "sub": sub,
            "aud": audience,
            "iat": now,
            "exp": now + expires_in,
            **({"nbf": now + not_before} if not_before is not None else {}),
            **claims,
        }
        return jwt.encode(payload, key.private, algorithm=key.algorithm, headers={"kid": key.kid})

    def rotate(self, algorithm: str = "RS256") -> SigningKey:
        """A new signing key replaces every old one in the JWKS."""
        self.keys = [new_key(algorithm)]
        return self.keys[0]

    # --- HTTP ---------------------------------------------------------------------------

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/.well-known/openid-configuration", self._discovery),
                Route("/jwks", self._jwks),
                Route("/authorize", self._authorize),
                Route("/token", self._token, methods=["POST", "OPTIONS"]),
            ]
        )

    def transport(self) -> httpx.AsyncBaseTransport:
        return httpx.ASGITransport(app=self.app())

    @contextmanager
    def serve(self) -> Iterator[Provider]:
        """Serve on a free loopback port in a thread; ``issuer`` becomes its URL."""
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.issuer = f"http://127.0.0.1:{sock.getsockname()[1]}"
        server = uvicorn.Server(uvicorn.Config(self.app(), log_level="warning"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        try:
            while not server.started:
                time.sleep(0.01)
            yield self
        finally:
            server.should_exit = True
            thread.join(timeout=10)
            sock.close()

    async def _discovery(self, request: Request) -> Response:
        if self.down:
            return PlainTextResponse("down", status_code=503)
        return JSONResponse(
            {
                "issuer": self.issuer,
                "jwks_uri": self.issuer + "/jwks",
                "authorization_endpoint": self.issuer + "/authorize",
                "token_endpoint": self.issuer + "/token",
                "response_types_supported": ["code"],
                "code_challenge_methods_supported": ["S256"],
            }
        )

    async def _jwks(self, request: Request) -> Response:
        if self.down:
            return PlainTextResponse("down", status_code=503)
        self.jwks_fetches += 1
        return JSONResponse({"keys": [key.jwk() for key in self.keys]})

    async def _authorize(self, request: Request) -> Response:
        query = request.query_params
        if query.get("response_type") != "code" or query.get("code_challenge_method") != "S256":
            return PlainTextResponse("code flow with PKCE S256 only", status_code=400)
        if query.get("client_id") != CLIENT_ID or not query.get("code_challenge"):
            return PlainTextResponse("unknown client or no code_challenge", status_code=400)
        code = secrets.token_urlsafe(16)
        self._grants[code] = _Grant(
            challenge=query["code_challenge"],
            redirect_uri=query["redirect_uri"],
            client_id=query["client_id"],
        )
        back = {"code": code, "state": query.get("state", "")}
        return RedirectResponse(query["redirect_uri"] + "?" + urlencode(back), status_code=302)

    async def _token(self, request: Request) -> Response:
        if request.method == "OPTIONS":
            return Response(status_code=204, headers={**CORS, "access-control-allow-headers": "*"})
        form = await request.form()
        grant = self._grants.pop(str(form.get("code", "")), None)
        verifier = str(form.get("code_verifier", ""))
        digest = hashlib.sha256(verifier.encode()).digest()
        challenge = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
        if (
            grant is None
            or form.get("grant_type") != "authorization_code"
            or grant.challenge != challenge
            or grant.redirect_uri != form.get("redirect_uri")
            or grant.client_id != form.get("client_id")
        ):
            return JSONResponse({"error": "invalid_grant"}, status_code=400, headers=CORS)
        token = self.token(expires_in=self.token_seconds, roles=["staff"])
        body = {"access_token": token, "token_type": "Bearer", "expires_in": self.token_seconds}
        return JSONResponse(body, headers=CORS)
