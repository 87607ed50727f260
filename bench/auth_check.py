"""Measure what deciding who asks costs per request: the auth middleware with no scheme, the
shared token, a JWT (seen before, and seen for the first time: parsed and its RS256
signature checked) and ``agent/auth.py`` hooks (async, and sync in a worker thread).

Each variant is the same bare Starlette app (one route answering ``{"ok": true}``) behind
eve's ``PrincipalAuth`` middleware, driven in process through httpx's ASGI transport, so the
figure is the request's whole in-process cost and the difference between variants is the
auth check's. The JWT variant's keys come from an in-process JWKS (an httpx mock transport),
fetched once before timing, as a server does at start; a token seen before is answered from
the verifier's memory of verified tokens, a new one (each request of ``JWT (first sight)``
sends another, minted beforehand) pays the whole check. Variants are interleaved, each round
a batch of requests, and the median of the rounds' per-request times is reported.

Run alone with ``python -m bench.auth_check [--quick]``; results land in
``bench/results/auth_check.{json,md}``.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bench._machine import machine_info, package_version
from bench._results import publish
from eve.auth import Principal, define_auth
from eve.auth.issuer_keys import IssuerKeys
from eve.auth.settings import OIDCSettings
from eve.auth.tokens import TokenVerifier
from eve.server.auth import ServerAuth
from eve.server.auth_hook import auth_hook
from eve.server.auth_middleware import PrincipalAuth

NAME = "auth_check"
ROUNDS, QUICK_ROUNDS = 31, 2
PER_ROUND, QUICK_PER_ROUND = 200, 50
ISSUER = "https://issuer.bench"
AUDIENCE = "https://eve.bench/api"
TOKEN = "bench-shared-token-0123456789abcdefghij"
KID = "bench-key"
USERS = {"key-of-ann": "ann"}


def _issuer(tokens: int) -> tuple[httpx.MockTransport, list[str]]:
    """A JWKS served in process, and ``tokens`` distinct tokens it verifies."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(private.public_key()))
    jwks = {"keys": [{**public, "kid": KID, "alg": "RS256", "use": "sig"}]}
    discovery = {"issuer": ISSUER, "jwks_uri": ISSUER + "/jwks"}

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=jwks if request.url.path == "/jwks" else discovery)

    claims = {"iss": ISSUER, "sub": "ann", "aud": AUDIENCE, "exp": int(time.time()) + 3600}
    minted = [
        jwt.encode({**claims, "jti": str(n)}, private, algorithm="RS256", headers={"kid": KID})
        for n in range(tokens)
    ]
    return httpx.MockTransport(answer), minted


def _sync_hook(request: Request) -> Principal | None:
    user = USERS.get(request.headers.get("x-api-key", ""))
    return None if user is None else Principal(id=f"key:{user}", kind="user")


async def _async_hook(request: Request) -> Principal | None:
    return _sync_hook(request)


async def _ok(request: Request) -> Response:
    return JSONResponse({"ok": True})


def _client(auth: ServerAuth) -> httpx.AsyncClient:
    app = Starlette(
        routes=[Route("/eve/v1/sessions", _ok)], middleware=[Middleware(PrincipalAuth, auth=auth)]
    )
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1")


#: the headers of each next request of a variant
Headers = Callable[[], dict[str, str]]


def _same(headers: dict[str, str]) -> Headers:
    return lambda: headers


async def _variants(requests: int) -> dict[str, tuple[ServerAuth, Headers]]:
    transport, tokens = _issuer(requests + 1)
    oidc = OIDCSettings(issuer=ISSUER, audience=AUDIENCE)
    verifier = TokenVerifier(oidc, IssuerKeys(oidc, transport=transport))
    await verifier.start()
    fresh = iter(tokens[1:])
    key = _same({"x-api-key": "key-of-ann"})
    return {
        "no auth": (ServerAuth(), _same({})),
        "shared token": (ServerAuth(token=TOKEN), _same({"authorization": f"Bearer {TOKEN}"})),
        "JWT (seen before)": (
            ServerAuth(verifier=verifier),
            _same({"authorization": f"Bearer {tokens[0]}"}),
        ),
        "JWT (first sight)": (
            ServerAuth(verifier=verifier),
            lambda: {"authorization": f"Bearer {next(fresh)}"},
        ),
        "hook (async)": (ServerAuth(hook=auth_hook(define_auth(_async_hook), source="b")), key),
        "hook (sync)": (ServerAuth(hook=auth_hook(define_auth(_sync_hook), source="b")), key),
    }


async def _round(client: httpx.AsyncClient, headers: Headers, count: int) -> float:
    requests = [headers() for _ in range(count)]  # minted tokens are read before timing
    start = time.perf_counter()
    for sent in requests:
        response = await client.get("/eve/v1/sessions", headers=sent)
        assert response.status_code == 200, response.text  # a refused request times nothing
    return (time.perf_counter() - start) / count * 1e6


async def measure(rounds: int, per_round: int) -> dict[str, list[float]]:
    warmup = per_round // 4 or 1
    variants = await _variants(warmup + rounds * per_round)
    clients = {name: _client(auth) for name, (auth, _) in variants.items()}
    timings: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    for name in names:  # warm-up: imports, first-call caches
        await _round(clients[name], variants[name][1], warmup)
    for index in range(rounds):
        for name in names[index % len(names) :] + names[: index % len(names)]:
            timings[name].append(await _round(clients[name], variants[name][1], per_round))
    for client in clients.values():
        await client.aclose()
    return timings


def _report(timings: dict[str, list[float]], rounds: int, per_round: int) -> dict[str, Any]:
    base = statistics.median(timings["no auth"])
    rows = {
        name: {
            "median_us": round(statistics.median(values), 1),
            "min_us": round(min(values), 1),
            "added_us": round(statistics.median(values) - base, 1),
            "ratio": round(statistics.median(values) / base, 2),
        }
        for name, values in timings.items()
    }
    return {
        "benchmark": NAME,
        "rounds": rounds,
        "requests_per_round": per_round,
        "variants": rows,
        "pyjwt": package_version("pyjwt"),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        **machine_info(),
    }


def _table(report: dict[str, Any]) -> str:
    lines = [
        "# Auth check per request",
        "",
        "One in-process request (httpx ASGI transport) to a bare route behind eve's auth "
        f"middleware; {report['rounds']} interleaved rounds of {report['requests_per_round']} "
        "requests per variant, median of the rounds' per-request times.",
        "",
        "| scheme | median µs/request | min µs/request | added µs | ÷ no auth |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, row in report["variants"].items():
        lines.append(
            f"| {name} | {row['median_us']} | {row['min_us']} | {row['added_us']} "
            f"| {row['ratio']:.2f} |"
        )
    lines += [
        "",
        f"Python {report['python']} on {report['platform']} ({report['cpu_count']} CPUs, "
        f"1-minute load {report['load_average_1m']:.1f}); pyjwt {report['pyjwt']}; "
        f"{report['date']}.",
        "",
    ]
    return "\n".join(lines)


def run(*, quick: bool = False) -> dict[str, Any]:
    rounds, per_round = (QUICK_ROUNDS, QUICK_PER_ROUND) if quick else (ROUNDS, PER_ROUND)
    report = _report(asyncio.run(measure(rounds, per_round)), rounds, per_round)
    publish(NAME, report, _table(report), quick=quick)
    return report


if __name__ == "__main__":
    run(quick="--quick" in sys.argv[1:])
