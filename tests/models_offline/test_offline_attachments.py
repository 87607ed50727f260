"""The offline models acknowledge what they cannot look at: attachments and tools' images."""

from __future__ import annotations

import json
from pathlib import Path

from eve.events import MessageReceived, SessionEvent
from eve.execution import TurnEnvironment, agent_setup, run_agent
from eve.messages import (
    AssistantMessage,
    DocumentPart,
    ImagePart,
    ToolResultMessage,
    UserMessage,
    user_message,
)
from eve.models.offline import OfflineScriptModel, OfflineTestModel
from eve.tools import tool
from tests.execution.helpers import live

PHOTO = ImagePart(media_type="image/png", data=b"\x89PNG")


@tool
def snap() -> list[object]:
    """Take a picture."""
    return ["a picture", PHOTO]


async def test_offline_test_acknowledges_attachments_and_tool_images() -> None:
    seen: list[SessionEvent] = []
    setup = agent_setup(OfflineTestModel(), instructions="s", tools=[live("snap", snap)])
    pdf = DocumentPart(media_type="application/pdf", url="https://x.test/a.pdf", name="a.pdf")
    message = user_message("look", [PHOTO, pdf])
    result = await run_agent(setup, message, env=TurnEnvironment(on_event=seen.append))
    assert result.final_text == (
        "(offline/test) I called 1 tool(s): (received 1 image and 1 document: image/png, "
        "4 bytes; a.pdf, application/pdf, at https://x.test/a.pdf)\n"
        "- snap: a picture (received 1 image: image/png, 4 bytes)"
    )
    assert result.messages[0] == message
    [tool_result] = [m for m in result.messages if isinstance(m, ToolResultMessage)]
    assert tool_result.media == [PHOTO]  # the model got the image as a part, not JSON
    [received] = [e for e in seen if isinstance(e, MessageReceived)]
    assert [(a.type, a.size, a.url) for a in received.data.attachments] == [
        ("image", 4, None),
        ("document", None, "https://x.test/a.pdf"),
    ]


async def test_offline_script_acknowledges_attachments_on_the_turns_first_response(
    tmp_path: Path,
) -> None:
    (tmp_path / "script.json").write_text(
        json.dumps(
            [
                {"text": "Nice."},
                {"text": "Plain."},
                {"tool_calls": [{"name": "snap"}]},
                {"text": "Done."},
            ]
        )
    )
    model = OfflineScriptModel(tmp_path / "script.json", label="script.json")
    setup = agent_setup(model, instructions="s", tools=[live("snap", snap)])
    first = await run_agent(setup, user_message("look", [PHOTO]))
    assert first.final_text == "Nice. (received 1 image: image/png, 4 bytes)"
    second = await run_agent(setup, "and now?", history=first.messages)
    assert second.final_text == "Plain."  # no attachment, nothing to acknowledge
    third = await run_agent(setup, UserMessage(parts=[PHOTO]), history=second.messages)
    replies = [m.text for m in third.messages if isinstance(m, AssistantMessage)]
    # the turn's first response, its calls with the note; the one after the results, without
    assert replies[-2:] == ["(received 1 image: image/png, 4 bytes)", "Done."]
