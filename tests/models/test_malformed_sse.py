"""A server-sent event whose data is not JSON is a protocol error, never a raw
``JSONDecodeError`` (issue 12, finding 7), through the real SDKs and the loopback server.

Both APIs document every event's ``data`` as one JSON object ("Streaming Messages",
https://docs.anthropic.com/en/api/messages-streaming; "Streaming API responses",
https://platform.openai.com/docs/guides/streaming-responses); a proxy that cuts or mangles a
line breaks that.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from eve.errors import ModelProtocolError
from eve.manifest import Retries
from eve.messages import user_message
from eve.models.anthropic import AnthropicModel
from eve.models.base import ModelRequest
from eve.models.openai import OpenAIModel
from tests.models.sse_server import Reply, ScriptedServer

KEY = "sk-ant-test-SECRET-1234567890"
SSE = {"Content-Type": "text/event-stream"}


def mangled(event: str | None) -> Reply:
    name = f"event: {event}\n" if event else ""
    return Reply(headers=SSE, chunks=[f'{name}data: {{"type": "message_start", "mess\n\n'.encode()])


async def drain(client: AnthropicModel | OpenAIModel) -> None:
    request = ModelRequest(system="", messages=[user_message("hi")], retries=Retries(attempts=2))
    async for _ in client.stream(request):
        pass


@pytest.mark.parametrize(
    ("make", "event"),
    [
        (lambda url: AnthropicModel("claude-test", api_key=KEY, base_url=url), "message_start"),
        (
            lambda url: OpenAIModel("gpt-test", api_key=KEY, base_url=url, api="chat-completions"),
            None,
        ),
        (
            lambda url: OpenAIModel("gpt-test", api_key=KEY, base_url=url, api="responses"),
            "response.created",
        ),
    ],
    ids=["anthropic", "openai-chat", "openai-responses"],
)
async def test_an_event_that_is_not_json_is_a_protocol_error(
    make: Callable[[str], AnthropicModel | OpenAIModel], event: str | None
) -> None:
    with (
        ScriptedServer(mangled(event)) as server,
        pytest.raises(ModelProtocolError, match="not JSON") as caught,
    ):
        await drain(make(server.url))
    assert not isinstance(caught.value.__cause__, ModelProtocolError)
    assert len(server.requests) == 1  # a broken protocol is not retried
    assert KEY not in str(caught.value)
