"""The MCP conformance suite's client, built on eve's connection pool: ``python
conformance_client.py SERVER_URL`` (the suite appends the URL and names the scenario in
``MCP_CONFORMANCE_SCENARIO``; a pre-registered client comes in ``MCP_CONFORMANCE_CONTEXT``).

It does what an eve turn does with a connection: lists the tools and calls them (arguments
made from each tool's input schema), signing in with ``oauth()`` for the ``auth/``
scenarios, its grant in memory (no turn lends a session database: the suite times a
client that starts per scenario, and the database's tests are tests/connections/
test_mcp_oauth*.py). The person is played here: the link
of ``authorization.required`` is opened without following the redirect, which is then
sent to eve's loopback callback listener, as a browser would. Exit status 0 when every
call answered, 1 otherwise (the suite judges the protocol)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from typing import Any

import httpx

from eve.connections import (
    authorization,
    define_mcp_connection,
    from_env,
    identity_provider,
    oauth,
)
from eve.connections.pool import ConnectionPool
from eve.costs import Spend
from eve.events import AuthorizationRequiredData
from eve.runtime.server_asks import FormAnswer, Sampled, SamplingAsk, SamplingRefused, SentCall
from tests.connections.servers import entry

SECRET_ENV = "EVE_CONFORMANCE_CLIENT_SECRET"
KEY_ENV = "EVE_CONFORMANCE_PRIVATE_KEY"
ID_TOKEN_ENV = "EVE_CONFORMANCE_ID_TOKEN"
#: the client ID metadata document the suite's basic-cimd scenario expects (SEP-991)
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


def _arguments(schema: dict[str, Any]) -> dict[str, Any]:
    samples = {
        "integer": 1,
        "number": 1,
        "boolean": True,
        "string": "eve",
        "array": [],
        "object": {},
    }
    properties: dict[str, Any] = schema.get("properties") or {}
    return {
        name: samples.get(str(properties.get(name, {}).get("type")), "eve")
        for name in schema.get("required") or []
    }


def _machine(context: dict[str, Any]) -> Any:
    """The client credentials scenarios: the client's secret, or its private key signing
    a JWT (RFC 7523), both handed over in the context."""
    if context.get("private_key_pem"):
        os.environ[KEY_ENV] = context["private_key_pem"]
        return oauth(
            grant="client_credentials",
            client_id=context["client_id"],
            private_key=from_env(KEY_ENV),
            signing_algorithm=context.get("signing_algorithm", "RS256"),
        )
    os.environ[SECRET_ENV] = context["client_secret"]
    return oauth(
        grant="client_credentials",
        client_id=context["client_id"],
        client_secret=from_env(SECRET_ENV),
    )


def _enterprise(context: dict[str, Any], url: str) -> Any:
    """The enterprise-managed scenario (SEP-990): the IdP's ID token and eve's clients at the
    IdP and the authorization server come in the context. The authorization server is
    configuration (``oauth(issuer=...)``, never what the MCP server names), and the suite
    starts it on a port of its own: this client plays the administrator who declares it,
    reading it once from the server's protected resource metadata (RFC 9728)."""
    os.environ[SECRET_ENV] = context["client_secret"]
    os.environ[ID_TOKEN_ENV] = context["idp_id_token"]
    return oauth(
        grant="identity_assertion",
        client_id=context["client_id"],
        client_secret=from_env(SECRET_ENV),
        issuer=_authorization_server(url),
        identity_provider=identity_provider(
            token_endpoint=context["idp_token_endpoint"],
            client_id=context["idp_client_id"],
            id_token=from_env(ID_TOKEN_ENV),
        ),
    )


def _authorization_server(url: str) -> str:
    challenge = httpx.post(url, json={}).headers.get("www-authenticate", "")
    metadata = challenge.split('resource_metadata="', 1)[1].split('"', 1)[0]
    issuer: str = httpx.get(metadata).json()["authorization_servers"][0]
    return issuer


def _auth(scenario: str, url: str) -> Any:
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    if scenario.startswith("auth/client-credentials"):
        return _machine(context)
    if scenario == "auth/cross-app-access-complete-flow":
        return _enterprise(context, url)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    redirect = f"http://127.0.0.1:{port}{authorization.CALLBACK_PATH}"
    client_id = context.get("client_id")
    secret = None
    if context.get("client_secret"):
        os.environ[SECRET_ENV] = context["client_secret"]
        secret = from_env(SECRET_ENV)
    return oauth(
        client_id=client_id,
        client_secret=secret,
        redirect_url=redirect,
        # the document the suite's authorization server expects (it fetches nothing)
        client_metadata_url=CLIENT_METADATA_URL,
        authorization_timeout_seconds=20,
    )


async def _person(data: AuthorizationRequiredData) -> None:
    async def sign_in() -> None:
        async with httpx.AsyncClient() as browser:
            approved = await browser.get(data.url)
            location = approved.headers.get("location")
            if location:
                await browser.get(location)

    asyncio.get_running_loop().create_task(sign_in())


class _PersonAccepts:
    """The person of a turn, played: a server's form is accepted as shown, its fields
    pre-filled with their defaults (eve fills them in, ``server_asks.with_defaults``);
    no model is lent for sampling, and nothing is recorded (no durable turn here)."""

    async def elicit(self, connection: str, message: str, schema: dict[str, Any]) -> FormAnswer:
        return FormAnswer(action="accept", values={})

    async def sample(self, ask: SamplingAsk) -> Sampled | SamplingRefused:
        return SamplingRefused(reason="the conformance client lends no model")

    async def sent_before(self) -> SentCall | None:
        return None

    async def sending(self, *, task_id: str | None = None) -> None:
        return None

    @property
    def spent(self) -> Spend:
        return Spend()

    @property
    def cancelled(self) -> bool:
        return False


async def main(url: str) -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    signs_in = scenario.startswith("auth/")
    connection = define_mcp_connection(
        description="The conformance suite's server.",
        url=url,
        auth=_auth(scenario, url) if signs_in else None,
        connect_timeout_seconds=20,
        call_timeout_seconds=20,
    )
    target = entry(connection, name="suite")
    pool = ConnectionPool()
    try:
        with authorization.lent(notify=_person):
            for tool in await pool.list_tools(target):
                arguments = _arguments(tool.input_schema)
                result = await pool.call(target, tool.name, arguments, asks=_PersonAccepts())
                print(f"{tool.name}: {result.text[:200]}")
    except Exception as error:
        print(f"{type(error).__name__}: {error}", file=sys.stderr)
        return 1
    finally:
        await pool.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[-1])))
