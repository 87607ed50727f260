"""Waiting for DBOS's status rows on SQLite: a workflow's end is written after its last
event (``session.waiting`` reaches a follower before the turn's row says SUCCESS), so a
test that reads the rows once a session is waiting waits for them first."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from tests.polling import pauses

#: the statuses of a workflow DBOS has not finished
UNFINISHED = ("PENDING", "ENQUEUED")


def statuses_when_ended(system_file: Path, like: str, *, seconds: float = 20) -> dict[str, str]:
    """``{workflow id: status}`` of the workflows whose id is ``LIKE like``, once none of
    them is unfinished (still unfinished after ``seconds`` fails the test)."""
    deadline = time.monotonic() + seconds
    reader = sqlite3.connect(system_file)
    try:
        for pause in pauses(0.1):
            rows = dict(
                reader.execute(
                    "SELECT workflow_uuid, status FROM workflow_status WHERE workflow_uuid LIKE ?",
                    (like,),
                ).fetchall()
            )
            unfinished = {w: s for w, s in rows.items() if s in UNFINISHED}
            if rows and not unfinished:
                return {str(w): str(s) for w, s in rows.items()}
            assert time.monotonic() < deadline, f"still unfinished: {unfinished or like}"
            time.sleep(pause)
    finally:
        reader.close()
    raise AssertionError("unreachable: pauses() never ends")
