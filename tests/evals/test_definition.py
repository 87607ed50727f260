"""What define_eval and Case refuse, as AuthoringErrors that say what to write instead."""

from __future__ import annotations

import pytest

from eve.errors import AuthoringError
from eve.evals import Case, Reply, define_eval


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Case("x"), "a Case needs at least one message to send"),
        (lambda: Case("", "hi"), "a Case's first argument is its name"),
        (lambda: Case("x", 3), "a Case's messages are strings"),
        (lambda: Case("x", "hi", script=[Reply("a")], model="offline/test"), "gives both"),
        (lambda: Case("x", "hi", expect=["bye"]), "'bye' is not an expectation"),
        (lambda: Case("x", "hi", repeat=0), "repeat must be more than 0"),
        (lambda: define_eval(cases=[]), "takes a non-empty list of Case values"),
        (lambda: define_eval(cases=[Case("a", "x"), Case("a", "y")]), "two cases are named 'a'"),
        (lambda: define_eval(cases=[Case("a", "x")], repeat=0), "repeat=...) must be at least 1"),
        (lambda: define_eval(cases=[Case("a", "x")], min_pass_rate=0), "min_pass_rate"),
    ],
)
def test_impossible_definitions_are_refused(build: object, message: str) -> None:
    with pytest.raises(AuthoringError, match=None) as raised:
        build()  # type: ignore[operator]
    assert message in str(raised.value)
