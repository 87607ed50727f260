"""A session database that goes away while ``eve serve`` runs: JSON 503s, never the URL."""

from __future__ import annotations

import io
import logging

from tests.conftest import AppFactory
from tests.postgres import SUPERUSER, PostgresServer
from tests.sessions.apps import say, scripted_app
from tests.sessions.inprocess import InProcessServer

#: trust authentication ignores it, so it can sit in the URL for the test to look for
PASSWORD = "hunter2-not-for-answers"


def test_requests_answer_503_once_the_database_is_gone(
    make_app: AppFactory, postgres_server: PostgresServer, postgres_url: str
) -> None:
    url = postgres_url.replace(f"//{SUPERUSER}@", f"//{SUPERUSER}:{PASSWORD}@")
    server = InProcessServer(scripted_app(make_app, [say("hi")]), env={"EVE_DATABASE_URL": url})
    # DBOS's logger writes to a handler of its own (as on eve serve's stderr), not the root
    dbos_log = io.StringIO()
    dbos_handler = logging.StreamHandler(dbos_log)
    logging.getLogger("dbos").addHandler(dbos_handler)
    server.start()
    try:
        session = server.create()
        # disconnects eve's connections, and every reconnect finds no database
        postgres_server.drop(postgres_url)
        answers = [
            server.get(f"/session/{session}/stream?follow=false"),
            server.post("/session", {}),
            server.send(session, "still there?"),
        ]
    finally:
        log = server.stop()
        logging.getLogger("dbos").removeHandler(dbos_handler)

    database = postgres_url.rsplit("/", 1)[-1]
    for response in answers:
        assert response.status_code == 503, response.text
        body = response.json()
        assert body["ok"] is False and body["code"] == "database_unavailable", body
        assert body["error"].startswith("the session database is unavailable (OperationalError)")
        assert PASSWORD not in response.text and database not in response.text
    # the fault is said once, by whichever noticed it first (a request, or DBOS's queue
    # poller): the repeats after it are counted, not logged
    told = "database is unavailable" in log or "OperationalError" in dbos_log.getvalue()
    assert told, (log, dbos_log.getvalue())
    assert PASSWORD not in log and PASSWORD not in dbos_log.getvalue()
