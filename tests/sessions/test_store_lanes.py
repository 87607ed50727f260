"""Every method of the store declares its lane in a worker (``store_lanes.py``)."""

from __future__ import annotations

import inspect

from eve.sessions.db_retry import retried
from eve.sessions.store import SessionStore
from eve.sessions.store_lanes import lane_of

#: public methods that are no call a worker runs in a thread
NOT_CALLS = {"close"}


def test_every_public_method_of_the_store_declares_its_lane() -> None:
    methods = {
        name: member
        for name, member in inspect.getmembers(SessionStore, inspect.isfunction)
        if not name.startswith("_") and name not in NOT_CALLS
    }
    assert "append_events" in methods and "read" in methods
    undeclared = sorted(name for name, method in methods.items() if lane_of(method) is None)
    assert undeclared == [], f"declare these methods' lane (store_lanes.lane): {undeclared}"


def test_a_write_that_may_share_a_transaction_may_also_run_again() -> None:
    """A group that breaks runs its writes again alone: only a retried method (made to run
    again after a failed transaction) may be one (``group_commit.py``)."""
    retried_code = retried(lambda _store: None).__code__
    for name, method in inspect.getmembers(SessionStore, inspect.isfunction):
        if lane_of(method) == "write":
            assert method.__code__ is retried_code, f"{name} is not @retried"
