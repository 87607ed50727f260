"""Provider error bodies reach ``turn.failed`` without any part of a key (issue 12, finding 5).

The real Anthropic SDK talks to the loopback server; a 400 whose body quotes a key is what
Anthropic sends for a malformed request that echoes input ("Errors", docs.anthropic.com/en/api/errors:
``{"type": "error", "error": {"type": "invalid_request_error", "message": ...}}``).
"""

from __future__ import annotations

import pytest

from eve.errors import ModelHTTPError
from eve.messages import user_message
from eve.models.anthropic import AnthropicModel
from eve.models.base import ModelRequest
from tests.models.sse_server import ScriptedServer, json_reply

CLIENT_KEY = "sk-ant-api03-CLIENTKEY-0123456789abcdef"
#: a key the client never held: only its shape can catch it
OTHER_KEY = "sk-ant-api03-OTHERKEY-0123456789abcdef"


async def _failure(server: ScriptedServer, message: str) -> str:
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    server.add(json_reply(400, body))
    model = AnthropicModel("claude-test", api_key=CLIENT_KEY, base_url=server.url)
    request = ModelRequest(system="", messages=[user_message("hi")])
    with pytest.raises(ModelHTTPError) as caught:
        async for _ in model.stream(request):
            pass
    return str(caught.value)


@pytest.mark.parametrize("key", [CLIENT_KEY, OTHER_KEY])
async def test_a_key_across_the_500_character_cut_leaves_no_prefix(
    server: ScriptedServer, key: str
) -> None:
    # the error text is "anthropic: HTTP 400: invalid_request_error: <message>"; with these
    # paddings the key starts a few characters before the cut at 500, at every offset
    for padding in range(440, 500, 3):
        text = await _failure(server, "x" * padding + key + " trailing")
        assert "sk-ant" not in text, padding
        assert "KEY-0123" not in text


async def test_a_key_glued_to_a_letter_is_redacted(server: ScriptedServer) -> None:
    text = await _failure(server, f"bad header value x{OTHER_KEY} and key={OTHER_KEY}")
    assert "OTHERKEY" not in text
    assert text.count("[redacted]") == 2
