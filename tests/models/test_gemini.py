"""The Gemini adapter at the transport: keys kept out of errors, cut and unreachable streams,
cancellation, and a whole ``eve run`` against the loopback Gemini."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from eve._redact import redact
from eve.errors import (
    ModelAuthError,
    ModelConnectionError,
    ModelCredentialsMissing,
    ModelError,
    ModelHTTPError,
)
from eve.manifest import ModelSettings, Retries
from eve.messages import user_message
from eve.models.base import ModelRequest
from eve.models.events import ModelEvent, TextDelta
from tests.cli.test_run_cli import eve_run
from tests.conftest import AppFactory
from tests.models.gemini_server import GeminiServer, Turn, error_reply, sse
from tests.models.sse_server import ScriptedServer

if TYPE_CHECKING:
    from eve.models.gemini import GeminiModel

KEY = "AIzaSyD-test-key-0000000000000000000"
ONE_TRY = Retries(attempts=1)


def model(url: str, key: str = KEY) -> GeminiModel:
    # eve.models.gemini imports google.genai (~0.23 CPU-s); every xdist worker collects this
    # module, most never run it, so the SDK is imported where a test first needs it.
    from eve.models.gemini import gemini_model

    return gemini_model(
        "google", "gemini-2.5-flash", {"GEMINI_API_KEY": key, "GOOGLE_GEMINI_BASE_URL": url}
    )


def request(**fields: object) -> ModelRequest:
    return ModelRequest(system="", messages=[user_message("hi")], **fields)  # type: ignore[arg-type]


async def collect(client: GeminiModel, req: ModelRequest) -> list[ModelEvent]:
    return [event async for event in client.stream(req)]


@pytest.mark.parametrize(
    ("status", "expected"), [(400, ModelHTTPError), (403, ModelAuthError), (500, ModelHTTPError)]
)
async def test_error_statuses_map_to_named_errors_without_the_key(
    server: ScriptedServer, status: int, expected: type[ModelHTTPError]
) -> None:
    server.add(error_reply(status, "INVALID_ARGUMENT", f"API key {KEY} not valid"))
    with pytest.raises(expected) as caught:
        await collect(model(server.url), request(retries=ONE_TRY))
    assert type(caught.value) is expected and caught.value.status == status
    assert KEY not in str(caught.value) and "INVALID_ARGUMENT" in str(caught.value)
    from google.genai import errors as genai_errors

    assert isinstance(caught.value.__cause__, genai_errors.APIError)


async def test_a_stream_cut_mid_chunk_is_a_connection_error(server: ScriptedServer) -> None:
    first = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hel"}]}}]}
    reply = sse([first], cut=True)
    reply.chunks.append(b'data: {"candidates": [{"content"')
    server.add(reply)
    seen: list[ModelEvent] = []
    with pytest.raises(ModelConnectionError):
        async for event in model(server.url).stream(request(retries=ONE_TRY)):
            seen.append(event)
    assert seen == [TextDelta(text="Hel")]


async def test_unreachable_server_is_a_connection_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ModelConnectionError) as caught:
        await collect(model(f"http://127.0.0.1:{port}"), request(retries=ONE_TRY))
    assert KEY not in str(caught.value)


async def test_cancellation_mid_stream_stops_without_done(server: ScriptedServer) -> None:
    pieces = [
        {"candidates": [{"content": {"role": "model", "parts": [{"text": word}]}}]}
        for word in ("one", "two")
    ]
    reply = sse([*pieces, {"candidates": [{"content": {"parts": []}, "finishReason": "STOP"}]}])
    reply.chunks.insert(1, 0.3)  # after the first text
    server.add(reply)
    req = request()
    seen: list[ModelEvent] = []

    async def consume() -> None:
        async for event in model(server.url).stream(req):
            seen.append(event)
            req.signal.cancel()

    await asyncio.wait_for(consume(), timeout=5)
    assert seen == [TextDelta(text="one")]


async def test_an_already_cancelled_request_sends_nothing(server: ScriptedServer) -> None:
    req = request()
    req.signal.cancel()
    assert await collect(model(server.url), req) == []
    assert server.requests == []


def test_eve_run_answers_with_gemini(make_app: AppFactory) -> None:
    agent = 'from eve import define_agent\ndefault = define_agent(model="google/gemini-3-flash-preview")\n'
    root = make_app({"agent/agent.py": agent})
    with GeminiServer(KEY) as api:
        api.script(Turn([{"text": "Hello from Gemini."}]))
        env = {"GEMINI_API_KEY": KEY, "GOOGLE_GEMINI_BASE_URL": api.url}
        done = eve_run(root, "hi", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello from Gemini.\n"
    assert api.bodies[0]["contents"][-1] == {"parts": [{"text": "hi"}], "role": "user"}


async def test_vertex_without_usable_credentials_says_how_to_sign_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "absent.json"))
    env = {"GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_VERTEX_BASE_URL": "http://127.0.0.1:9"}
    from eve.models.gemini import gemini_model

    client = gemini_model("vertex", "gemini-2.5-flash", env)
    with pytest.raises(ModelCredentialsMissing, match="application-default login") as caught:
        await collect(client, request(retries=ONE_TRY))
    assert caught.value.variable == "GOOGLE_APPLICATION_CREDENTIALS"


@pytest.mark.parametrize("variable", ["GEMINI_API_KEY", "GOOGLE_API_KEY"])
def test_a_gemini_key_in_the_environment_is_redacted_everywhere(
    monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, KEY)
    assert redact(f"stored: {KEY}") == "stored: [redacted]"


async def test_a_setting_the_sdk_does_not_know_fails_before_sending(
    server: ScriptedServer,
) -> None:
    req = request(settings=ModelSettings(extra={"notAField": 1}), retries=ONE_TRY)
    with pytest.raises(ModelError, match="cannot build the request") as caught:
        await collect(model(server.url), req)
    assert type(caught.value) is ModelError and server.requests == []
