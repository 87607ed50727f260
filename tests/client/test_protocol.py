"""The pure half of the client: reconnect bookkeeping and error bodies."""

from __future__ import annotations

import msgspec
import pytest

from eve.client.calls import Calls
from eve.client.protocol import StreamCursor, api_error, server_root
from eve.errors import ServerUnreachable

#: the data each event type these tests use needs besides its ids
_DATA: dict[str, dict[str, object]] = {
    "step.started": {"step_index": 0},
    "turn.completed": {"stop_reason": "complete", "usage": {}},
}


def line(index: int, type_: str = "step.started", turn: str = "turn_0") -> bytes:
    event = {
        "type": type_,
        "data": {"session_id": "sess_x", "turn_id": turn, **_DATA[type_]},
        "meta": {"id": f"evt_{index}", "at": "2026-12-03T00:00:00+00:00", "index": index},
    }
    return msgspec.json.encode(event)


def test_a_reconnected_reader_drops_what_it_already_saw() -> None:
    cursor = StreamCursor(0, reconnect_timeout=1)
    assert [cursor.accept(line(i)) is not None for i in (0, 1)] == [True, True]
    assert cursor.params(follow=True) == {"startIndex": "2", "follow": "true"}
    # a server that replays from an older index: the repeats are dropped
    assert cursor.accept(line(1)) is None
    assert cursor.accept(b"") is None  # heartbeat
    assert cursor.accept(line(2)) is not None and cursor.next_index == 3


def test_a_turn_reader_sees_only_its_turn_and_stops_at_its_end() -> None:
    cursor = StreamCursor(
        0, until=frozenset({"turn.completed"}), turn_id="turn_1", reconnect_timeout=1
    )
    assert cursor.accept(line(0, "turn.completed", "turn_0")) is None
    assert not cursor.done
    ended = cursor.accept(line(1, "turn.completed", "turn_1"))
    assert ended is not None and ended.type == "turn.completed" and cursor.done


def test_retrying_backs_off_then_gives_up() -> None:
    cursor = StreamCursor(0, reconnect_timeout=0)
    error = ConnectionError("refused")
    assert cursor.retry_delay(error) == 0.1
    with pytest.raises(ServerUnreachable, match="did not answer for 0 s"):
        cursor.retry_delay(error)


def test_error_bodies_become_named_errors() -> None:
    error = api_error(409, b'{"ok": false, "code": "session_not_active", "error": "ended"}')
    assert (error.status, error.code, str(error)) == (
        409,
        "session_not_active",
        "409 session_not_active: ended",
    )
    proxy = api_error(502, b"<html>bad gateway</html>")
    assert (proxy.code, proxy.status) == ("http_error", 502)
    assert "bad gateway" in str(proxy)


def responses_body(
    answers: dict[str, str], values: dict[str, dict[str, object]] | None = None
) -> dict[str, object]:
    """The JSON an answer call sends."""
    content = Calls.respond("ses_1", answers, values).content
    assert content is not None
    body: dict[str, object] = msgspec.json.decode(content)
    return body


def test_urls_and_bodies() -> None:
    assert server_root("http://h:1/eve/v1/") == server_root("http://h:1") == "http://h:1"
    assert responses_body({"req_1": "approve"}) == {
        "inputResponses": [{"requestId": "req_1", "optionId": "approve"}]
    }
    # a form's values go with its answer only
    form = responses_body({"req_1": "approve", "req_2": "accept"}, {"req_2": {"nights": 2}})
    assert form["inputResponses"] == [
        {"requestId": "req_1", "optionId": "approve"},
        {"requestId": "req_2", "optionId": "accept", "values": {"nights": 2}},
    ]
