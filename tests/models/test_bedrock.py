"""The Bedrock adapter at the transport: real ``boto3`` against the loopback Bedrock
(``bedrock_server``): streaming, signed requests, credentials and region from the standard
chain, throttling retried, errors in and out of the stream, cancellation, ``eve run``, and
no credential in a stored session."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from eve._model_windows import known_window
from eve.costs import price
from eve.errors import (
    ModelAuthError,
    ModelConnectionError,
    ModelContextWindowExceeded,
    ModelCredentialsMissing,
    ModelError,
    ModelRateLimited,
    ModelRetriesExhausted,
    ModelSDKMissing,
)
from eve.manifest import Retries
from eve.messages import user_message
from eve.models.base import ModelRequest
from eve.models.bedrock import BedrockModel, bedrock_model
from eve.models.events import Done, ModelEvent, Retrying, TextDelta, TokenUsage
from eve.models.registry import create_client
from tests.cli.test_run_cli import eve_run
from tests.conftest import AppFactory
from tests.models.bedrock_server import (
    BedrockServer,
    Turn,
    error_reply,
    not_ready,
    stream,
    throttled,
    unavailable,
)
from tests.models.eventstream import event
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer
from tests.sessions.test_secrets import assert_nowhere_stored

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
LLAMA = "meta.llama3-3-70b-instruct-v1:0"
ONE_TRY = Retries(attempts=1)
FAST = Retries(attempts=4, max_delay_seconds=0.01)


@pytest.fixture
def api() -> Iterator[BedrockServer]:
    with BedrockServer() as running:
        yield running


@pytest.fixture
def no_aws_chain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No AWS credentials or region anywhere the standard chain looks (and no instance
    metadata service to wait for)."""
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "absent-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "absent-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def client(api: BedrockServer, model: str = MODEL) -> BedrockModel:
    return bedrock_model(model, api.env)


def ask(text: str = "hi", **fields: object) -> ModelRequest:
    return ModelRequest(system="Be brief.", messages=[user_message(text)], **fields)  # type: ignore[arg-type]


async def collect(model: BedrockModel, request: ModelRequest) -> list[ModelEvent]:
    return [e async for e in model.stream(request)]


async def test_text_streams_from_a_signed_converse_stream_request(api: BedrockServer) -> None:
    api.script(Turn([{"text": "Sunny in Oslo."}], output_tokens=4))
    model = client(api)
    assert model.model_id == f"bedrock/{MODEL}"
    events = await collect(model, ask())
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Sunny i", "n Oslo."]
    done = events[-1]
    assert isinstance(done, Done) and done.stop_reason == "end_turn"
    assert done.usage.output_tokens == 4 and done.usage.input_tokens > 0
    # the server recomputed the SigV4 signature with the secret: the request was signed
    assert api.requests[0].path == f"/model/{MODEL.replace(':', '%3A')}/converse-stream"
    assert api.requests[0].headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=")
    body = api.bodies[0]
    assert body["system"][0] == {"text": "Be brief."}
    assert body["inferenceConfig"] == {"maxTokens": 4096}
    assert body["messages"][0]["content"][0] == {"text": "hi"}


async def test_a_wrong_secret_is_the_signature_error_without_the_secret(
    api: BedrockServer,
) -> None:
    env = {**api.env, "AWS_SECRET_ACCESS_KEY": "not-the-secret-0123456789"}
    with pytest.raises(ModelAuthError, match="signature we calculated") as caught:
        await collect(bedrock_model(MODEL, env), ask(retries=ONE_TRY))
    assert caught.value.status == 403 and "not-the-secret" not in str(caught.value)
    assert api.secret not in str(caught.value)


async def test_a_session_token_is_signed_and_never_logged(
    api: BedrockServer, caplog: pytest.LogCaptureFixture
) -> None:
    api.script(Turn([{"text": "one"}]))
    env = {**api.env, "AWS_SESSION_TOKEN": "session-token-0123456789"}
    with caplog.at_level(logging.DEBUG, logger="botocore"):
        assert isinstance((await collect(bedrock_model(MODEL, env), ask()))[-1], Done)
    assert api.requests[0].headers["x-amz-security-token"] == env["AWS_SESSION_TOKEN"]
    # botocore's DEBUG log quotes the signed request, token header and all: redacted
    assert "X-Amz-Security-Token" in caplog.text and "CanonicalRequest" in caplog.text
    assert env["AWS_SESSION_TOKEN"] not in caplog.text and api.secret not in caplog.text


@pytest.mark.usefixtures("no_aws_chain")
async def test_a_bedrock_api_key_stands_in_for_credentials(
    api: BedrockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "bedrock-api-key-0123456789abcdef"
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", key)
    env = {"AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": api.url}
    env["AWS_BEARER_TOKEN_BEDROCK"] = key
    # botocore sends the key as a bearer token, over HTTPS only: it gets that far, no
    # credentials asked for, and the key is nowhere in the error
    with pytest.raises(ModelError, match="requires an HTTPS endpoint") as caught:
        await collect(bedrock_model(MODEL, env), ask(retries=ONE_TRY))
    assert not isinstance(caught.value, ModelCredentialsMissing) and key not in str(caught.value)


@pytest.mark.usefixtures("no_aws_chain")
async def test_without_credentials_nothing_is_sent_and_the_error_says_how(
    api: BedrockServer,
) -> None:
    env = {"AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": api.url}
    with pytest.raises(ModelCredentialsMissing, match="AWS_ACCESS_KEY_ID") as caught:
        await collect(bedrock_model(MODEL, env), ask())
    assert caught.value.variable == "AWS_ACCESS_KEY_ID" and api.requests == []


@pytest.mark.usefixtures("no_aws_chain")
def test_without_a_region_the_model_cannot_be_made(tmp_path: Path) -> None:
    with pytest.raises(ModelCredentialsMissing, match="AWS_REGION is not set") as caught:
        create_client(f"bedrock/{MODEL}", app_root=tmp_path, env={"AWS_ACCESS_KEY_ID": "x"})
    assert caught.value.variable == "AWS_REGION"


@pytest.mark.usefixtures("no_aws_chain")
def test_a_profile_that_does_not_exist_is_named() -> None:
    env = {"AWS_PROFILE": "nowhere", "AWS_REGION": "us-east-1"}
    with pytest.raises(ModelCredentialsMissing, match="nowhere") as caught:
        bedrock_model(MODEL, env)
    assert caught.value.variable == "AWS_PROFILE"


def test_without_boto3_the_error_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(sys.modules, "eve.models.bedrock", raising=False)
    monkeypatch.setitem(sys.modules, "boto3", None)
    with pytest.raises(ModelSDKMissing, match=r"eve-durable\[bedrock\]") as missing:
        create_client(f"bedrock/{MODEL}", app_root=tmp_path, env={"AWS_REGION": "us-east-1"})
    assert (missing.value.package, missing.value.extra) == ("boto3", "bedrock")


async def test_throttling_unready_and_unavailable_are_retried(api: BedrockServer) -> None:
    api.script(throttled(), not_ready(), unavailable(), Turn([{"text": "ok"}]))
    events = await collect(client(api), ask(retries=FAST))
    reasons = [e.reason for e in events if isinstance(e, Retrying)]
    assert [r.split(":")[1].strip() for r in reasons] == ["HTTP 429", "HTTP 429", "HTTP 503"]
    assert "ThrottlingException" in reasons[0] and "ModelNotReadyException" in reasons[1]
    assert isinstance(events[-1], Done) and len(api.requests) == 4


async def test_throttling_past_the_attempts_gives_up(api: BedrockServer) -> None:
    api.script(throttled(), throttled())
    with pytest.raises(ModelRetriesExhausted) as exhausted:
        await collect(client(api), ask(retries=Retries(attempts=2, max_delay_seconds=0.01)))
    assert exhausted.value.attempts == 2
    api.script(throttled())
    with pytest.raises(ModelRateLimited):
        await collect(client(api), ask(retries=ONE_TRY))


async def test_a_model_stream_error_mid_stream_is_a_cut_stream_and_retried(
    api: BedrockServer,
) -> None:
    api.script(Turn([{"text": "Hello there"}], fail_after=2))
    seen: list[ModelEvent] = []
    with pytest.raises(ModelConnectionError, match="modelStreamErrorException") as caught:
        async for item in client(api).stream(ask(retries=ONE_TRY)):
            seen.append(item)
    assert seen == [TextDelta(text="Hello")] and "Model Stream Error" in str(caught.value)
    api.script(Turn([{"text": "Hello there"}], fail_after=2), Turn([{"text": "Hi."}]))
    events = await collect(client(api), ask(retries=FAST))
    assert [type(e).__name__ for e in events] == [
        "TextDelta",
        "Retrying",
        "TextDelta",
        "TextDelta",
        "PartCompleted",
        "Done",
    ]


async def test_a_request_over_the_window_says_what_to_set(api: BedrockServer) -> None:
    api.script(error_reply(400, "ValidationException", "Input is too long for requested model."))
    with pytest.raises(ModelContextWindowExceeded, match="model_context_window_tokens"):
        await collect(client(api), ask(retries=ONE_TRY))


async def test_an_exception_event_is_judged_by_its_documented_status(api: BedrockServer) -> None:
    from tests.models.eventstream import exception

    frames = [event("messageStart", {"role": "assistant"})]
    api.script(stream([*frames, exception("throttlingException", {"message": "slow down"})]))
    with pytest.raises(ModelRateLimited, match="slow down") as caught:
        await collect(client(api), ask(retries=ONE_TRY))
    assert caught.value.status == 429


async def test_a_stream_cut_before_message_stop_is_a_connection_error(
    api: BedrockServer,
) -> None:
    delta = event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "par"}})
    api.script(stream([event("messageStart", {"role": "assistant"}), delta]))
    with pytest.raises(ModelConnectionError, match="no messageStop"):
        await collect(client(api), ask(retries=ONE_TRY))
    api.script(stream([delta, delta[:9]], cut=True))
    with pytest.raises(ModelConnectionError):
        await collect(client(api), ask(retries=ONE_TRY))


async def test_cancellation_mid_stream_stops_without_done(api: BedrockServer) -> None:
    frames = [
        event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": word}})
        for word in ("one", "two")
    ]
    reply = stream([*frames, event("messageStop", {"stopReason": "end_turn"})])
    reply.chunks.insert(1, 0.3)
    api.script(reply)
    request = ask()
    seen: list[ModelEvent] = []

    async def consume() -> None:
        async for item in client(api).stream(request):
            seen.append(item)
            request.signal.cancel()

    await asyncio.wait_for(consume(), timeout=5)
    assert seen == [TextDelta(text="one")]


AGENT = 'from eve import define_agent\ndefault = define_agent(model="bedrock/{model}")\n'


def test_eve_run_answers_with_bedrock(make_app: AppFactory, api: BedrockServer) -> None:
    root = make_app({"agent/agent.py": AGENT.format(model=MODEL)})
    api.script(Turn([{"text": "Hello from Bedrock."}]))
    done = eve_run(root, "hi", env=api.env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello from Bedrock.\n"


def test_no_credential_reaches_the_stored_session(make_app: AppFactory, api: BedrockServer) -> None:
    token = "FwoGZXIvYXdzEJr-session-token-0123456789abcdef"
    env = {**api.env, "AWS_SESSION_TOKEN": token}
    # a model that echoes the secrets back (as a confused proxy or a prompt injection might)
    api.script(Turn([{"text": f"secret {api.secret} token {token}"}]))
    root = make_app({"agent/agent.py": AGENT.format(model=MODEL)})
    server = InProcessServer(root, env=env).start()
    try:
        session = server.create("hi")
        events = server.wait_for(session, count("session.waiting"))
        raw = server.get(f"/session/{session}/stream?follow=false").text
    finally:
        server.stop()
    assert api.requests[0].headers["x-amz-security-token"] == token
    assert "secret [redacted] token [redacted]" in raw and events
    for secret in (api.secret, token):
        assert secret not in raw
        assert_nowhere_stored(root, secret)


def test_bedrock_models_are_priced_and_claude_and_nova_windowed() -> None:
    usage = TokenUsage(input_tokens=1000, output_tokens=100, cache_read_tokens=1000)
    for model in (f"bedrock/{MODEL}", "bedrock/amazon.nova-pro-v1:0", f"bedrock/{LLAMA}"):
        assert price(model, usage).usd is not None, model
    assert price("bedrock/acme.unknown-v1:0", usage).unpriced == ["bedrock/acme.unknown-v1:0"]
    claude = known_window(f"bedrock/{MODEL}")
    assert claude is not None and claude.tokens == 200_000
    nova = known_window("bedrock/eu.amazon.nova-lite-v1:0")
    assert nova is not None and nova.tokens == 300_000
    assert known_window(f"bedrock/{LLAMA}") is None
