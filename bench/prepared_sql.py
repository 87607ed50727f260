"""The CPU of the writes a turn makes on SQLite: ``Connection.execute`` against ``run_prepared``.

Every turn records its place (an INSERT), marks it started and done (two UPDATEs), records
each step (an INSERT, three a turn in the scale benchmark) and saves its checkpoint (two
UPDATEs). Each runs here on a SQLite file of eve's schema, through SQLAlchemy's
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

from eve.sessions.accepted import _ACCEPT, _FINISH, _STARTED
from eve.sessions.prepared_sql import run_prepared
from eve.sessions.step_records import _NEW_RECORD
from eve.sessions.store import _CURRENT_VERSION, _RECYCLE_CHECKPOINT, SessionStore

ROUNDS, QUICK_ROUNDS = 31, 5
#: turns' writes a round
TURNS = 100

Run = Callable[[Connection, Any, dict[str, Any]], Any]


def _turn(c: Connection, run: Run, turn: int) -> int:
    """One turn's writes; how many statements."""
    workflow = f"ses_a:turn-{turn}"
    place = {
        "session_id": "ses_a",
        "turn": turn,
        "kind": "turn",
        "input": '{"parts":[{"type":"text","text":"go"}]}',
        "state": "accepted",
        "workflow_id": workflow,
        "reruns": 0,
        "accepted_at": time.time(),
    }
    run(c, _ACCEPT, place)
    run(c, _STARTED, {"b_workflow": workflow})
    for step in range(3):
        record = {"workflow_id": workflow, "step_key": f"model:{step}", "record": "{}"}
        run(c, _NEW_RECORD["sqlite"], {**record, "recorded_at": time.time()})
    saving = {"b_session": "ses_a", "b_version": turn, "b_data": "{}", "b_saved_by": workflow}
    run(c, _RECYCLE_CHECKPOINT, saving)
    run(c, _CURRENT_VERSION, {"b_session": "ses_a", "b_version": turn})
    run(c, _FINISH, {"b_workflow": workflow})
    return 8


def _executed(c: Connection, statement: Any, values: dict[str, Any]) -> Any:
    return c.execute(statement, values)


def _round(store: SessionStore, run: Run) -> float:
    """µs of CPU a statement over one round's turns."""
    statements = 0
    with store.engine.connect() as c:
        transaction = c.begin()
        start = time.process_time_ns()
        for turn in range(TURNS):
            statements += _turn(c, run, turn)
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
        figures: dict[str, list[float]] = {"execute": [], "run_prepared": []}
        ways: list[tuple[str, Run]] = [("execute", _executed), ("run_prepared", run_prepared)]
        for index in range(rounds + 1):
            for name, run in ways if index % 2 == 0 else ways[::-1]:
                spent = _round(store, run)
                if index:  # the first round warms both up (compiles, caches)
                    figures[name].append(spent)
        store.close()
    executed, prepared = (statistics.median(figures[name]) for name, _ in ways)
    print("| way | µs a statement (median) |")
    print("|---|---|")
    print(f"| `Connection.execute` | {executed:.2f} |")
    print(f"| `run_prepared` | {prepared:.2f} ({prepared / executed:.2f}×) |")


if __name__ == "__main__":
    main()
