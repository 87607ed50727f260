"""``eve sessions prune``: counts what it deletes, deletes nothing on a dry run, and names a
period it cannot read (exit 2). ``eve sessions fork``: writes a fork a running server goes
on with."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from eve.cli import main
from eve.sessions.settings import SESSIONS_DIR
from tests.conftest import AppFactory
from tests.sessions.apps import say, scripted_app
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer


def _prune(root: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["-C", str(root), "sessions", "prune", *args], env=env)
    return result.exit_code, result.output


def _ran_a_session(make_app: AppFactory) -> Path:
    root = scripted_app(make_app, [say("one"), say("two")])
    server = InProcessServer(root).start()
    try:
        session = server.create("hello")
        server.wait_for(session, count("session.waiting"))
        assert server.send(session, "again").status_code == 202
        server.wait_for(session, count("session.waiting", 2))
    finally:
        server.stop()
    return root


def test_prune_dry_run_then_prune_says_what_it_deleted(make_app: AppFactory) -> None:
    root = _ran_a_session(make_app)
    code, out = _prune(root, "--older-than", "1d", "--json")
    assert code == 0, out
    assert json.loads(out)["total"] == 0  # finished just now: younger than a day

    code, out = _prune(root, "--older-than", "0s", "--dry-run", "--json")
    assert code == 0, out
    dry = json.loads(out)
    assert dry["dryRun"] and dry["deleted"] == {"SUCCESS": 2} and dry["total"] == 2

    code, out = _prune(root, "--older-than", "0s")
    assert code == 0, out
    assert out.startswith("deleted the records of 2 workflow(s) that finished more than 0s ago")
    assert "SUCCESS 2" in out

    code, out = _prune(root, "--older-than", "0s", "--json")
    assert json.loads(out)["total"] == 0  # gone: the dry run had deleted nothing before
    assert json.loads(out)["accepted"] == 0  # done, but younger than an Idempotency-Key


def test_prune_counts_the_accepted_places_of_turns_done_long_ago(make_app: AppFactory) -> None:
    root = _ran_a_session(make_app)
    with sqlite3.connect(root / SESSIONS_DIR / "eve.sqlite") as c:
        # two days ago, past an Idempotency-Key's day; turn_0 is done (turn_1 ran after it)
        c.execute("UPDATE eve_accepted SET accepted_at = accepted_at - 2 * 86400")
        (done,) = c.execute("SELECT count(*) FROM eve_accepted WHERE state = 'done'").fetchone()
    assert done >= 1
    code, out = _prune(root, "--older-than", "1d", "--dry-run", "--json")
    assert code == 0, out
    assert json.loads(out)["accepted"] == done
    code, out = _prune(root, "--older-than", "1d")
    assert code == 0, out
    assert f"deleted {done} accepted turn record(s) of turns done long ago" in out
    code, out = _prune(root, "--older-than", "1d", "--json")
    assert json.loads(out)["accepted"] == 0


@pytest.mark.parametrize("period", ["7x", "seven days", "-1d", ""])
def test_a_period_eve_cannot_read_is_exit_2(make_app: AppFactory, period: str) -> None:
    code, out = _prune(make_app(), "--older-than", period)
    assert code == 2, out
    assert "--older-than must be a number and a unit" in out and repr(period) in out


def test_eve_retention_is_the_default_period(make_app: AppFactory) -> None:
    code, out = _prune(make_app(), env={"EVE_RETENTION": "soon"})
    assert code == 2 and "EVE_RETENTION must be a number and a unit" in out
    code, out = _prune(make_app(), env={"EVE_RETENTION": "off"})
    assert code == 0 and "nothing deleted: EVE_RETENTION is 'off'" in out


def test_a_database_that_is_not_postgres_is_named(make_app: AppFactory) -> None:
    code, out = _prune(make_app(), "--database", "mysql://db")
    assert code != 0 and "--database must be a postgresql:// URL" in out


def test_eve_serve_refuses_an_eve_retention_it_cannot_read(make_app: AppFactory) -> None:
    root = make_app()
    result = CliRunner().invoke(main, ["-C", str(root), "serve"], env={"EVE_RETENTION": "7x"})
    assert result.exit_code == 2, result.output
    assert "EVE_RETENTION must be a number and a unit" in result.output


def _fork(root: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["-C", str(root), "sessions", "fork", *args])
    return result.exit_code, result.stdout + result.stderr


def test_fork_writes_a_fork_the_running_server_goes_on_with(make_app: AppFactory) -> None:
    root = scripted_app(make_app, [say("one"), say("two, after one"), say("again")])
    server = InProcessServer(root).start()
    try:
        source = server.create("hello")
        server.wait_for(source, count("session.waiting"))
        code, out = _fork(root, source)
        assert code == 0, out
        fork = out.strip()
        code, out = _fork(root, source, "--json")
        assert code == 0 and json.loads(out)["forkedFrom"] == source, out
        code, out = _fork(root, source, "--principal", "user:bob")
        assert (code, out) == (1, f"eve: no session {source}\n")
        code, out = _fork(root, source, "--principal", "bob")
        assert code == 2 and "KIND:ID" in out
        assert server.send(fork, "and then?").status_code == 202
        events = server.wait_for(fork, count("session.waiting"))
        summary = server.get(f"/session/{fork}").json()
    finally:
        server.stop()
    # the server picked up the fork the CLI wrote, with the source's history
    replies = [e["data"]["message"] for e in events if e["type"] == "message.completed"]
    assert replies == ["two, after one"]
    assert (summary["forkedFrom"], summary["owner"]["kind"]) == (source, "operator")
