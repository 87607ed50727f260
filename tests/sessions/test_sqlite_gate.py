"""The SQLite gate: one transaction at a time in the process, a request's first, and a
thread that holds it may enter again."""

from __future__ import annotations

import threading
import time

from eve.sessions.database_errors import fail_fast
from eve.sessions.sqlite_gate import SqliteGate


def test_a_waiting_request_goes_before_waiting_background_work() -> None:
    gate = SqliteGate()
    order: list[str] = []
    release = threading.Event()

    def holder() -> None:
        with gate.held():
            order.append("holder")
            release.wait(10)

    def background() -> None:
        with gate.held():
            order.append("background")

    def request() -> None:
        with fail_fast(), gate.held():
            order.append("request")

    first = threading.Thread(target=holder)
    first.start()
    while order != ["holder"]:
        time.sleep(0.001)
    waiting = [threading.Thread(target=background), threading.Thread(target=request)]
    waiting[0].start()
    while gate.waited < 1:  # the background one waits first
        time.sleep(0.001)
    waiting[1].start()
    while gate.waited < 2:
        time.sleep(0.001)
    release.set()
    for thread in [first, *waiting]:
        thread.join(10)
    assert order == ["holder", "request", "background"]


def test_the_holder_may_enter_again() -> None:
    gate = SqliteGate()
    with gate.held(), gate.held():
        entered = True
    assert entered
    with gate.held():  # and it was let go
        pass
