"""A real OAuth 2.1 authorization server and the MCP server it protects, on one loopback port.

Written for the tests from the specifications, each rule citing its section: the MCP
authorization spec (2025-11-25, "Authorization"), RFC 9728 (protected resource metadata),
RFC 8414 (authorization server metadata), RFC 7591 (dynamic client registration), RFC 6749
(the code, refresh and client credentials grants and their errors), RFC 7523 (a client
authenticating with a JWT it signs, and the JWT bearer grant), RFC 7636 (PKCE), RFC 6750
(bearer tokens and their challenges), and for enterprise-managed authorization (SEP-990) an
identity provider's RFC 8693 token exchange of an ID token for an ID-JAG. The MCP server is the SDK's (``MCPServer``, Streamable HTTP);
the authorization is this module's. It runs in a thread (uvicorn), and a test reads and
changes its state directly: who signs in next, which refresh tokens are revoked.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote_plus, urlencode

import jwt
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from tests.connections.servers import free_port

#: the scope every MCP request needs, and the one the ``admin`` tool needs besides
READ = "mcp:read"
ADMIN = "mcp:admin"
#: RFC 7523 §2.2: the client_assertion_type of a client authenticating with a JWT
JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
#: RFC 7523 §2.1: the grant type presenting a JWT (here an ID-JAG) as the grant
JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
#: RFC 8693 §2.1 and the ID-JAG's token types (SEP-990)
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"


@dataclass
class Grant:
    client_id: str
    scope: str
    subject: str


@dataclass
class AuthState:
    """What the authorization server knows, shared with the test."""

    issuer: str
    #: who the person signing in next is (the test plays them)
    subject: str = "alice"
    #: access tokens' lifetime (``expires_in``)
    access_seconds: int = 3600
    clients: dict[str, dict[str, Any]] = field(default_factory=dict)
    codes: dict[str, dict[str, Any]] = field(default_factory=dict)
    access: dict[str, tuple[Grant, float]] = field(default_factory=dict)
    refresh: dict[str, Grant] = field(default_factory=dict)
    #: every token issued, access and refresh: what must never show up in eve's records
    issued: list[str] = field(default_factory=list)
    #: what the token endpoint was asked, by grant type
    grants: list[str] = field(default_factory=list)
    #: how many authorization requests a person was sent to
    authorizations: int = 0
    #: the jti of every client assertion taken (RFC 7523 §3: each used once)
    assertions: set[str] = field(default_factory=set)
    #: the enterprise identity provider's signing key, eve's client there, and the client
    #: of this authorization server its ID-JAGs are for (SEP-990)
    idp_key: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    idp_client: str = "eve-at-the-idp"
    jag_client: str = "enterprise"
    #: how many ID tokens the identity provider exchanged for an ID-JAG
    exchanges: int = 0
    #: seconds the registration and the token endpoint take to answer (a slow server)
    register_seconds: float = 0.0
    token_seconds: float = 0.0

    @property
    def resource(self) -> str:
        return f"{self.issuer}/mcp"

    @property
    def idp(self) -> str:
        return f"{self.issuer}/idp"

    def id_token(self, subject: str, *, seconds: int = 600) -> str:
        """An ID token the identity provider issued to eve's client for ``subject``."""
        now = int(time.time())
        claims = {"iss": self.idp, "sub": subject, "aud": self.idp_client}
        token = jwt.encode({**claims, "iat": now, "exp": now + seconds}, self.idp_key, "HS256")
        self.issued.append(token)
        return token

    def expire_access_tokens(self) -> None:
        """Every access token expired, as time passing would (RFC 6749 §5.1 expires_in)."""
        self.access = {token: (grant, 0.0) for token, (grant, _) in self.access.items()}

    def revoke_refresh_tokens(self) -> None:
        """Every refresh token revoked (RFC 7009's effect): the next refresh is invalid_grant."""
        self.refresh.clear()

    def subject_of(self, authorization: str | None) -> Grant | None:
        if not authorization or not authorization.startswith("Bearer "):
            return None
        held = self.access.get(authorization.removeprefix("Bearer "))
        if held is None or held[1] < time.time():
            return None
        return held[0]

    def _issue(self, grant: Grant, *, refresh: bool = True) -> dict[str, Any]:
        access = secrets.token_urlsafe(24)
        self.access[access] = (grant, time.time() + self.access_seconds)
        self.issued.append(access)
        answer = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": self.access_seconds,
            "scope": grant.scope,
        }
        if refresh:
            answer["refresh_token"] = secrets.token_urlsafe(24)
            self.refresh[answer["refresh_token"]] = grant
            self.issued.append(answer["refresh_token"])
        return answer


def _error(status: int, error: str, description: str) -> JSONResponse:
    # RFC 6749 §5.2: the token endpoint's error response, JSON with error and description
    return JSONResponse({"error": error, "error_description": description}, status_code=status)


class AuthorizationServer:
    """The authorization server's endpoints over one ``AuthState``."""

    def __init__(self, state: AuthState) -> None:
        self.state = state

    async def metadata(self, request: Request) -> Response:
        # RFC 8414 §2: the metadata; MCP authorization requires PKCE S256 to be listed
        # (code_challenge_methods_supported, "Authorization Server Metadata Discovery")
        issuer = self.state.issuer
        return JSONResponse(
            {
                "issuer": issuer,
                "authorization_endpoint": f"{issuer}/authorize",
                "token_endpoint": f"{issuer}/token",
                "registration_endpoint": f"{issuer}/register",
                "response_types_supported": ["code"],
                "grant_types_supported": [
                    "authorization_code",
                    "refresh_token",
                    "client_credentials",
                    JWT_BEARER_GRANT,
                ],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": [
                    "none",
                    "client_secret_basic",
                    "client_secret_post",
                    "private_key_jwt",
                ],
                "token_endpoint_auth_signing_alg_values_supported": ["ES256", "RS256"],
                "scopes_supported": [READ, ADMIN],
            }
        )

    async def register(self, request: Request) -> Response:
        # RFC 7591 §3.1: a client registers with its metadata; §3.2.1 answers 201 with the
        # client_id (and a secret when it authenticates at the token endpoint)
        await asyncio.sleep(self.state.register_seconds)
        body = await request.json()
        uris = body.get("redirect_uris")
        if not isinstance(uris, list) or not uris:
            # RFC 7591 §3.2.2: invalid_redirect_uri
            return _error(400, "invalid_redirect_uri", "redirect_uris is required")
        client_id = "client-" + secrets.token_hex(8)
        method = body.get("token_endpoint_auth_method") or "client_secret_basic"
        record: dict[str, Any] = {
            **body,
            "client_id": client_id,
            "token_endpoint_auth_method": method,
        }
        if method != "none":
            record["client_secret"] = secrets.token_urlsafe(16)
            self.state.issued.append(record["client_secret"])
        self.state.clients[client_id] = record
        return JSONResponse(record, status_code=201)

    async def authorize(self, request: Request) -> Response:
        # RFC 6749 §4.1.1 with OAuth 2.1's mandatory PKCE (RFC 7636 §4.3: code_challenge and
        # code_challenge_method=S256, which MCP authorization requires)
        query = request.query_params
        client = self.state.clients.get(query.get("client_id", ""))
        redirect = query.get("redirect_uri", "")
        if client is None or redirect not in client.get("redirect_uris", []):
            # RFC 6749 §4.1.2.1: never redirect to an unverified URI; tell the person
            return Response("unknown client or redirect_uri", status_code=400)
        if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            return _redirect(redirect, error="invalid_request", state=query.get("state"))
        if query.get("resource") != self.state.resource:
            # RFC 8707 §2: the resource the token is for (MCP: "Resource Parameter")
            return _redirect(redirect, error="invalid_target", state=query.get("state"))
        self.state.authorizations += 1
        code = secrets.token_urlsafe(16)
        self.state.codes[code] = {
            "client_id": client["client_id"],
            "redirect_uri": redirect,
            "challenge": query["code_challenge"],
            "scope": query.get("scope") or READ,
            "subject": self.state.subject,
        }
        # RFC 6749 §4.1.2: back to the client with the code and its state unchanged
        return _redirect(redirect, code=code, state=query.get("state"))

    async def token(self, request: Request) -> Response:
        await asyncio.sleep(self.state.token_seconds)
        form = await request.form()
        client = self._authenticated(request, form)
        if client is None:
            # RFC 6749 §5.2: invalid_client, 401 when the client tried to authenticate
            return _error(401, "invalid_client", "unknown client or wrong credentials")
        grant_type = str(form.get("grant_type"))
        self.state.grants.append(grant_type)
        if grant_type == "authorization_code":
            return self._code_grant(client, form)
        if grant_type == "client_credentials":
            # RFC 6749 §4.4.2: only a confidential client may use it, and it is who signs
            # in; §4.4.3: a refresh token SHOULD NOT be included
            if client["token_endpoint_auth_method"] == "none":
                return _error(400, "unauthorized_client", "a public client has no credentials")
            scope = str(form.get("scope") or READ)
            grant = Grant(client_id=client["client_id"], scope=scope, subject=client["client_id"])
            return JSONResponse(self.state._issue(grant, refresh=False))
        if grant_type == "refresh_token":
            # RFC 6749 §6: a refresh token issued to this client, not revoked
            held = self.state.refresh.pop(str(form.get("refresh_token", "")), None)
            if held is None or held.client_id != client["client_id"]:
                return _error(400, "invalid_grant", "refresh token revoked or unknown")
            return JSONResponse(self.state._issue(held))
        if grant_type == JWT_BEARER_GRANT:
            return self._assertion_grant(client, form)
        return _error(400, "unsupported_grant_type", grant_type)

    def _assertion_grant(self, client: dict[str, Any], form: Any) -> Response:
        # RFC 7523 §2.1 and §3 with SEP-990: an ID-JAG the trusted identity provider signed
        # (typ oauth-id-jag+jwt) for this server (aud), this resource, and the client
        # presenting it; no refresh token, as for client credentials
        assertion = str(form.get("assertion", ""))
        state = self.state
        try:
            if jwt.get_unverified_header(assertion).get("typ") != "oauth-id-jag+jwt":
                return _error(400, "invalid_grant", "not an ID-JAG")
            claims = jwt.decode(
                assertion,
                state.idp_key,
                algorithms=["HS256"],
                audience=[state.issuer, f"{state.issuer}/"],
                issuer=state.idp,
            )
        except jwt.PyJWTError as error:
            return _error(400, "invalid_grant", f"ID-JAG rejected: {error}")
        if (
            claims.get("client_id") != client["client_id"]
            or claims.get("resource") != state.resource
        ):
            return _error(400, "invalid_grant", "the ID-JAG is for another client or resource")
        scope = str(form.get("scope") or READ)
        grant = Grant(client_id=client["client_id"], scope=scope, subject=str(claims["sub"]))
        return JSONResponse(state._issue(grant, refresh=False))

    async def exchange(self, request: Request) -> Response:
        """The identity provider's token endpoint (RFC 8693 §2.1): an ID token it issued to
        eve's client, exchanged for an ID-JAG naming the authorization server (audience)
        and the MCP server (resource)."""
        form = await request.form()
        state = self.state
        if form.get("grant_type") != TOKEN_EXCHANGE:
            return _error(400, "unsupported_grant_type", str(form.get("grant_type")))
        kinds = (form.get("subject_token_type"), form.get("requested_token_type"))
        if kinds != (ID_TOKEN, ID_JAG):
            return _error(400, "invalid_request", f"token types {kinds}")
        if (form.get("audience"), form.get("resource")) != (state.issuer, state.resource):
            return _error(400, "invalid_target", "unknown audience or resource")
        try:
            claims = jwt.decode(
                str(form.get("subject_token", "")),
                state.idp_key,
                algorithms=["HS256"],
                audience=state.idp_client,
                issuer=state.idp,
            )
        except jwt.PyJWTError as error:
            return _error(400, "invalid_grant", f"ID token rejected: {error}")
        state.exchanges += 1
        now = int(time.time())
        jag = {
            **{"iss": state.idp, "sub": claims["sub"], "aud": state.issuer},
            **{"resource": state.resource, "client_id": state.jag_client},
            **{"jti": secrets.token_hex(8), "iat": now, "exp": now + 300},
        }
        token = jwt.encode(jag, state.idp_key, "HS256", headers={"typ": "oauth-id-jag+jwt"})
        state.issued.append(token)
        return JSONResponse(
            {"access_token": token, "issued_token_type": ID_JAG, "token_type": "N_A"}
        )

    def _code_grant(self, client: dict[str, Any], form: Any) -> Response:
        # RFC 6749 §4.1.3: a code is used once, by the client it was issued to, with the
        # same redirect_uri; RFC 7636 §4.6: S256 of the verifier equals the challenge
        code = self.state.codes.pop(str(form.get("code", "")), None)
        if code is None or code["client_id"] != client["client_id"]:
            return _error(400, "invalid_grant", "unknown or used code")
        if form.get("redirect_uri") != code["redirect_uri"]:
            return _error(400, "invalid_grant", "redirect_uri differs from the authorization's")
        verifier = str(form.get("code_verifier", ""))
        digest = hashlib.sha256(verifier.encode()).digest()
        if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != code["challenge"]:
            return _error(400, "invalid_grant", "PKCE verification failed")
        grant = Grant(client_id=client["client_id"], scope=code["scope"], subject=code["subject"])
        return JSONResponse(self.state._issue(grant))

    def _authenticated(self, request: Request, form: Any) -> dict[str, Any] | None:
        """The client the token request authenticates, or None (RFC 6749 §2.3)."""
        if form.get("client_assertion_type") == JWT_BEARER:
            return self._asserted(str(form.get("client_assertion", "")))
        client_id, secret = _client_credentials(request, form)
        client = self.state.clients.get(client_id)
        if client is None or client["token_endpoint_auth_method"] == "private_key_jwt":
            return None
        if client.get("client_secret") and secret != client["client_secret"]:
            return None
        return client

    def _asserted(self, assertion: str) -> dict[str, Any] | None:
        """RFC 7523 §3: the JWT is signed by the client's registered key, its iss and sub
        are the client's id, its aud names this server (the issuer, or the token endpoint)
        and it has not expired; its jti is used once (§3 item 7)."""
        try:
            claims = jwt.decode(assertion, options={"verify_signature": False})
            client = self.state.clients.get(str(claims.get("iss")))
            if client is None or client["token_endpoint_auth_method"] != "private_key_jwt":
                return None
            issuer = self.state.issuer
            checked = jwt.decode(
                assertion,
                client["public_key"],
                algorithms=[client["signing_alg"]],
                audience=[issuer, f"{issuer}/", f"{issuer}/token"],
                options={"require": ["exp", "iss", "sub", "aud", "jti"]},
            )
        except jwt.PyJWTError:
            return None
        if checked["sub"] != client["client_id"] or checked["jti"] in self.state.assertions:
            return None
        self.state.assertions.add(checked["jti"])
        return client


def _client_credentials(request: Request, form: Any) -> tuple[str, str | None]:
    """The client's id and secret: HTTP Basic (RFC 6749 §2.3.1, which a server MUST take,
    the parts form-urlencoded first) or in the body (client_secret_post)."""
    basic = request.headers.get("authorization", "")
    if basic.startswith("Basic "):
        user, _, password = base64.b64decode(basic[6:]).decode().partition(":")
        return unquote_plus(user), unquote_plus(password)
    secret = form.get("client_secret")
    return str(form.get("client_id", "")), None if secret is None else str(secret)


def _redirect(uri: str, **params: str | None) -> Response:
    query = urlencode({key: value for key, value in params.items() if value is not None})
    return RedirectResponse(f"{uri}?{query}", status_code=302)


class BearerGuard:
    """The resource server's side (MCP authorization, "Access Token Usage"): every request
    to the MCP endpoint carries a valid token for it, or is refused with a challenge."""

    def __init__(self, app: ASGIApp, state: AuthState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        body = await request.body()
        grant = self.state.subject_of(request.headers.get("authorization"))
        metadata = f"{self.state.issuer}/.well-known/oauth-protected-resource/mcp"
        if grant is None:
            # RFC 6750 §3 and RFC 9728 §5.1: 401 with a Bearer challenge naming the
            # resource metadata; MCP "Scope Challenge Handling": the scope needed
            challenge = f'Bearer resource_metadata="{metadata}", scope="{READ}"'
            response: Response = Response(status_code=401, headers={"WWW-Authenticate": challenge})
            await response(scope, receive, send)
            return
        if _calls_tool(body, "admin") and ADMIN not in grant.scope.split():
            # RFC 6750 §3.1: insufficient_scope is 403; MCP step-up: the scopes to ask for
            challenge = (
                f'Bearer error="insufficient_scope", scope="{READ} {ADMIN}", '
                f'resource_metadata="{metadata}"'
            )
            response = Response(status_code=403, headers={"WWW-Authenticate": challenge})
            await response(scope, receive, send)
            return
        await self.app(scope, _replay(body, receive), send)


def _calls_tool(body: bytes, name: str) -> bool:
    with contextlib.suppress(ValueError):
        message = json.loads(body)
        return bool(
            isinstance(message, dict)
            and message.get("method") == "tools/call"
            and (message.get("params") or {}).get("name") == name
        )
    return False


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body read already, then the client's own messages (its disconnect)."""
    sent = False

    async def replayed() -> Any:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def _mcp_server(state: AuthState) -> MCPServer:
    server = MCPServer(name="eve-oauth-test-server")

    @server.tool()
    def whoami(ctx: Context) -> str:
        """Who the token was issued to."""
        grant = state.subject_of((ctx.headers or {}).get("authorization"))
        return grant.subject if grant else "nobody"

    @server.tool()
    def admin() -> str:
        """Needs the admin scope."""
        return "admin done"

    return server


def _app(state: AuthState) -> ASGIApp:
    server = AuthorizationServer(state)
    mcp_app = _mcp_server(state).streamable_http_app(streamable_http_path="/mcp")
    guarded = BearerGuard(mcp_app, state)

    async def resource_metadata(request: Request) -> Response:
        # RFC 9728 §2 and §3.1 (the well-known URI with the resource's path appended); MCP
        # authorization: authorization_servers lists where tokens come from
        return JSONResponse(
            {
                "resource": state.resource,
                "authorization_servers": [state.issuer],
                "scopes_supported": [READ, ADMIN],
                "bearer_methods_supported": ["header"],
            }
        )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> Any:
        async with mcp_app.router.lifespan_context(mcp_app):
            yield

    outer = Starlette(
        routes=[
            Route("/.well-known/oauth-protected-resource/mcp", resource_metadata),
            Route("/.well-known/oauth-authorization-server", server.metadata),
            Route("/register", server.register, methods=["POST"]),
            Route("/authorize", server.authorize),
            Route("/token", server.token, methods=["POST"]),
            Route("/idp/token", server.exchange, methods=["POST"]),
        ],
        lifespan=lifespan,
    )

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == "/mcp":
            await guarded(scope, receive, send)
        else:
            await outer(scope, receive, send)

    return app


@contextlib.contextmanager
def protected_server() -> Iterator[AuthState]:
    """The servers on a free loopback port, in a thread, while the block runs."""
    port = free_port()
    state = AuthState(issuer=f"http://127.0.0.1:{port}")
    config = uvicorn.Config(_app(state), host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            assert thread.is_alive(), "the OAuth test server did not start"
            time.sleep(0.02)
        yield state
    finally:
        server.should_exit = True
        thread.join(10)
