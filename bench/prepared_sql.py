"""The CPU of the writes and reads a turn makes on SQLite: ``Connection.execute`` against
``run_prepared``.

Every turn records its place (an INSERT), marks it started and done (two UPDATEs), records
each step (an INSERT, three a turn in the scale benchmark) and saves its checkpoint (two
UPDATEs); it reads its session's head place and claims its number (an UPDATE returning it),
and its body reads its progress, the log's end, its checkpoint and its records. Each runs
here on a SQLite file of eve's schema, through SQLAlchemy's
``Connection.execute`` (the compiled cache looked up at every call) and through
``run_prepared`` (``eve/sessions/prepared_sql.py``: compiled once, ``exec_driver_sql``), in
one transaction a round, rolled back, in alternating rounds; the figures are medians of the
rounds' CPU (``time.process_time_ns``) per statement.

Run with ``python -m bench.prepared_sql [--quick]``; it prints its table and writes nothing.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Connection

from eve.sessions.accepted import _ACCEPT, _FINISH, _HEAD, _STARTED
from eve.sessions.prepared_sql import run_prepared
from eve.sessions.step_records import _NEW_RECORD, _RECORDS
from eve.sessions.store import (
    _CLAIM_TURN,
    _CURRENT_CHECKPOINT,
    _CURRENT_VERSION,
    _NEXT_EVENT,
    _PROGRESS,
    _RECYCLE_CHECKPOINT,
    SessionStore,
)
from eve.sessions.tables import events

ROUNDS, QUICK_ROUNDS = 31, 5
#: turns' writes a round
TURNS = 100
#: the turn whose rows the reads find
KEPT = 1_000

Run = Callable[[Connection, Any, dict[str, Any]], Any]


def _place(workflow: str, turn: int) -> dict[str, Any]:
    return {
        "session_id": "ses_a",
        "turn": turn,
        "kind": "turn",
        "input": '{"parts":[{"type":"text","text":"go"}]}',
        "state": "accepted",
        "workflow_id": workflow,
        "reruns": 0,
        "accepted_at": time.time(),
    }


def _turn(c: Connection, run: Run, turn: int) -> int:
    """One turn's writes; how many statements."""
    workflow = f"ses_a:turn-{turn}"
    run(c, _ACCEPT, _place(workflow, turn))
    run(c, _STARTED, {"b_workflow": workflow})
    for step in range(3):
        record = {"workflow_id": workflow, "step_key": f"model:{step}", "record": "{}"}
        run(c, _NEW_RECORD["sqlite"], {**record, "recorded_at": time.time()})
    saving = {"b_session": "ses_a", "b_version": turn, "b_data": "{}", "b_saved_by": workflow}
    run(c, _RECYCLE_CHECKPOINT, saving)
    run(c, _CURRENT_VERSION, {"b_session": "ses_a", "b_version": turn})
    run(c, _FINISH, {"b_workflow": workflow})
    return 8


def _reads(c: Connection, run: Run, turn: int) -> int:
    """One turn's reads (and its claim, an UPDATE returning the number); how many."""
    workflow = {"b_workflow": f"ses_a:turn-{KEPT}"}  # ``_committed``'s rows, found each time
    session = {"b_session": "ses_a"}
    run(c, _HEAD, session).first()
    run(c, _CLAIM_TURN, session).first()
    run(c, _PROGRESS, workflow).all()
    run(c, _NEXT_EVENT, session).scalar()
    run(c, _CURRENT_CHECKPOINT, session).first()
    run(c, _RECORDS, workflow).all()
    return 6


def _committed(store: SessionStore) -> None:
    """A turn's rows for the reads to find: its place, records, checkpoint and events."""
    with store.engine.begin() as c:
        _turn(c, run_prepared, KEPT)  # past the rounds' turns, which roll back
        run_prepared(c, _ACCEPT, _place(f"ses_a:turn-{KEPT + 1}", KEPT + 1))
        rows = [
            {"session_id": "ses_a", "idx": index, "workflow_id": f"ses_a:turn-{KEPT}",
             "body_seq": None, "step_key": f"model:{index // 4}", "attempt": 0, "payload": "{}"}
            for index in range(12)
        ]  # fmt: skip
        c.execute(events.insert(), rows)


def _executed(c: Connection, statement: Any, values: dict[str, Any]) -> Any:
    return c.execute(statement, values)


def _round(store: SessionStore, run: Run, statements_of: Callable[..., int]) -> float:
    """µs of CPU a statement over one round's turns."""
    statements = 0
    with store.engine.connect() as c:
        transaction = c.begin()
        start = time.process_time_ns()
        for turn in range(TURNS):
            statements += statements_of(c, run, turn)
        spent = time.process_time_ns() - start
        transaction.rollback()
    return spent / statements / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds: a smoke test")
    rounds = QUICK_ROUNDS if parser.parse_args().quick else ROUNDS
    with tempfile.TemporaryDirectory() as folder:
        store = SessionStore(f"sqlite:///{Path(folder) / 'eve.sqlite'}")
        store.create_session("ses_a")
        _committed(store)
        figures: dict[str, list[float]] = {}
        ways: list[tuple[str, Run]] = [("execute", _executed), ("run_prepared", run_prepared)]
        kinds = [("writes", _turn), ("reads", _reads)]
        for index in range(rounds + 1):
            for name, run in ways if index % 2 == 0 else ways[::-1]:
                for kind, statements_of in kinds:
                    spent = _round(store, run, statements_of)
                    if index:  # the first round warms both up (compiles, caches)
                        figures.setdefault(f"{kind} {name}", []).append(spent)
        store.close()
    print("| statements | `Connection.execute`, µs a statement (median) | `run_prepared` |")
    print("|---|---|---|")
    for kind, _ in kinds:
        executed, prepared = (statistics.median(figures[f"{kind} {name}"]) for name, _ in ways)
        print(f"| {kind} | {executed:.2f} | {prepared:.2f} ({prepared / executed:.2f}×) |")


if __name__ == "__main__":
    main()
