"""The person's answer to a sign-in (``eve.connections.authorization``): the callback goes to
the sign-in waiting for its state once; a repeat of it within the sign-in's wait (a reloaded
tab) is taken as the first was and changes nothing; any other state is refused."""

from __future__ import annotations

import asyncio
import secrets

import pytest

from eve.connections import authorization
from eve.connections.authorization import Callback
from eve.errors import OAuthCallbackInvalid


async def test_a_repeated_callback_is_taken_as_the_first_and_changes_nothing() -> None:
    state = secrets.token_urlsafe(32)
    answer = authorization.expect(state, seconds=30)
    authorization.complete(Callback(state=state, code="first"))
    authorization.complete(Callback(state=state, code="second"))  # the tab reloaded
    assert (await answer).code == "first"
    authorization.forget(state)  # as the sign-in does once answered
    authorization.complete(Callback(state=state, code="third"))
    assert answer.result().code == "first"


async def test_a_callback_repeated_after_the_sign_ins_wait_is_refused() -> None:
    state = secrets.token_urlsafe(32)
    answer = authorization.expect(state, seconds=0)
    authorization.complete(Callback(state=state, code="first"))
    assert (await answer).code == "first"
    with pytest.raises(OAuthCallbackInvalid, match="no sign-in waits"):
        authorization.complete(Callback(state=state, code="first"))


async def test_a_state_never_issued_is_refused_and_a_waiting_one_stays() -> None:
    state = secrets.token_urlsafe(32)
    answer = authorization.expect(state, seconds=30)
    try:
        with pytest.raises(OAuthCallbackInvalid, match="no sign-in waits"):
            authorization.complete(Callback(state=state + "x", code="guess"))
        with pytest.raises(OAuthCallbackInvalid, match="neither code nor error"):
            authorization.complete(Callback(state=state))
        await asyncio.sleep(0)
        assert not answer.done()
    finally:
        authorization.forget(state)
