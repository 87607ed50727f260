"""How the ``mcp`` channel folds a session's log into one turn (``eve.channels.mcp_turns``),
on logs written here: what a served turn rarely shows (a subagent's events inside its
caller's turn, a place in the log that is no turn); and its options, as declared."""

from __future__ import annotations

import msgspec
import pytest

from eve._usage import TokenUsage
from eve.channels.kinds.mcp import Options
from eve.channels.mcp_turns import TurnFold
from eve.errors import TurnNotFound
from eve.events import (
    EventData,
    EventMeta,
    InputRequestedData,
    InputResolvedData,
    MessageCompletedData,
    Option,
    ParentLink,
    SessionEvent,
    SessionStartedData,
    ToolApprovalRequest,
    TurnCompletedData,
    TurnStartedData,
    TurnWaitingData,
    event_of,
)

SESSION = "ses_fold"
CHILD = ParentLink(session_id=SESSION, call_id="call_0_0")


def log(*data: EventData) -> list[SessionEvent]:
    return [
        event_of(d, EventMeta(id=f"evt_{i}", at="2026-01-01T00:00:00Z", index=i))
        for i, d in enumerate(data)
    ]


def folded(
    events: list[SessionEvent],
    *,
    turn_id: str | None = None,
    answered: frozenset[str] = frozenset(),
    stopping: bool = False,
) -> TurnFold:
    turn = TurnFold(session_id=SESSION, turn_id=turn_id, answered=answered, stopping=stopping)
    for event in events:
        turn.add(event)
    turn.fix_target()
    return turn


def approval(request_id: str, *, child: bool = False) -> InputRequestedData:
    request = ToolApprovalRequest(
        request_id=request_id,
        options=[Option(id="approve", label="Approve"), Option(id="deny", label="Deny")],
        tool_name="ship",
        call_id="call_0_0",
        input={"item": "anvil"},
        rule="always",
    )
    return InputRequestedData(
        session_id="ses_child" if child else SESSION,
        turn_id="turn_0",
        node_id="helper" if child else None,
        parent=CHILD if child else None,
        requests=[request],
    )


def started(turn_id: str, *, child: bool = False) -> TurnStartedData:
    if child:
        return TurnStartedData(
            session_id="ses_child", turn_id=turn_id, node_id="helper", parent=CHILD
        )
    return TurnStartedData(session_id=SESSION, turn_id=turn_id)


def said(text: str, *, child: bool = False) -> MessageCompletedData:
    parent = CHILD if child else None
    return MessageCompletedData(
        session_id=SESSION, turn_id="turn_0", parent=parent, message=text, finish_reason="end_turn"
    )


def completed(turn_id: str) -> TurnCompletedData:
    return TurnCompletedData(
        session_id=SESSION, turn_id=turn_id, stop_reason="complete", usage=TokenUsage()
    )


def test_a_subagents_events_stay_in_its_callers_turn() -> None:
    """The child's own turn_0 neither starts a turn of the caller's nor gives its answer;
    its approval request is the caller's turn's to answer."""
    events = log(
        SessionStartedData(session_id=SESSION),
        started("turn_0"),
        started("turn_0", child=True),
        approval("req_child", child=True),
        TurnWaitingData(session_id=SESSION, turn_id="turn_0", on="input"),
        InputResolvedData(session_id=SESSION, request_id="req_child", option_id="approve"),
        said("the child's answer", child=True),
        said("the caller's answer"),
        completed("turn_0"),
    )
    parked = folded(events[:5])
    view = parked.view(wait_seconds=5)
    assert (view.turn_id, view.status) == ("turn_0", "waiting")
    assert [r.request_id for r in view.requests] == ["req_child"]
    assert parked.settled

    resumed = folded(events[:7])
    assert (resumed.view(wait_seconds=5).status, resumed.settled) == ("running", False)
    done = folded(events, turn_id="turn_0").view(wait_seconds=5)
    assert (done.status, done.answer, done.requests) == ("completed", "the caller's answer", [])


def test_an_answered_request_runs_the_turn_again_before_the_log_says_so() -> None:
    events = log(
        SessionStartedData(session_id=SESSION),
        started("turn_0"),
        approval("req_1"),
        TurnWaitingData(session_id=SESSION, turn_id="turn_0", on="input"),
    )
    answered = folded(events, answered=frozenset({"req_1"}))
    assert (answered.view(wait_seconds=5).status, answered.settled) == ("running", False)
    assert answered.view(wait_seconds=5).requests == []

    stopping = folded(events, stopping=True)
    assert not stopping.settled, "a cancelled parked turn settles when it ends, not before"


def test_a_turn_id_that_is_no_turn_is_refused_and_a_later_one_is_queued() -> None:
    """turn_1 was a reset's place: turn_2 started after it, so turn_1 never will."""
    events = log(
        SessionStartedData(session_id=SESSION),
        started("turn_0"),
        completed("turn_0"),
        started("turn_2"),
    )
    with pytest.raises(TurnNotFound) as missing:
        folded(events, turn_id="turn_1")
    assert (missing.value.session_id, missing.value.turn_id) == (SESSION, "turn_1")
    assert folded(events, turn_id="turn_3").view(wait_seconds=5).status == "queued"
    assert folded(events).view(wait_seconds=5).turn_id == "turn_2"


def test_the_channels_options_are_checked_where_they_are_read() -> None:
    assert msgspec.convert({}, Options) == Options(wait_seconds=20.0, max_wait_seconds=50.0)
    for wrong, said in [
        ({"wait_seconds": 60}, "wait_seconds must be between 0 and max_wait_seconds"),
        ({"wait_seconds": -1}, "wait_seconds must be between 0 and max_wait_seconds"),
        ({"wait": 5}, "unknown field `wait`"),
    ]:
        with pytest.raises(msgspec.ValidationError, match=said):
            msgspec.convert(wrong, Options)
