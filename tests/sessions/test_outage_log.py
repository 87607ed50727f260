"""The outage lines of ``db_retry``: each outage is logged when it begins, even when the
one before ended with a call that gave up waiting and a call that worked at once."""

from __future__ import annotations

import logging
import sqlite3
import time

import pytest
import sqlalchemy as sa

from eve.sessions.db_retry import waited_out

LOCKED = sa.exc.OperationalError("BEGIN", {}, sqlite3.OperationalError("database is locked"))


def locked() -> None:
    raise LOCKED


def works() -> str:
    return "ok"


def test_an_outage_after_one_given_up_on_is_logged_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="eve.sessions"):
        for _ in range(2):
            # waits once (0.05 s), then the next wait would pass the deadline: it gives up
            with pytest.raises(sa.exc.OperationalError):
                waited_out(locked, deadline=time.monotonic() + 0.08, stopped=lambda: False)
            assert waited_out(works, deadline=time.monotonic() + 1, stopped=lambda: False) == "ok"
    lines = [r.getMessage() for r in caplog.records if r.name == "eve.sessions"]
    began = "the session database is out of reach (OperationalError); waiting for it"
    assert lines == [began, "the session database is reachable again"] * 2
