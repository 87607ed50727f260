"""The turn queue is in the system database before DBOS launches (its queue manager's first
look then finds it), with the settings the launched worker registers; a row already there
is left for that registration, which updates it by DBOS's version rule."""

from __future__ import annotations

from pathlib import Path

from dbos import DBOSClient

from eve.sessions import resolve_settings
from eve.sessions.engine import dbos_config
from eve.sessions.turn_queue import POLLING_INTERVAL_SECONDS, TURN_QUEUE, declare_turn_queue


def test_a_new_database_holds_the_turn_queue_before_launch(tmp_path: Path) -> None:
    config = dbos_config(resolve_settings(tmp_path, env={}))
    url = config["system_database_url"]
    assert url is not None
    declare_turn_queue(config)
    client = DBOSClient(system_database_url=url, application_name="eve")
    try:
        queue = client.retrieve_queue(TURN_QUEUE)
        assert queue is not None
        assert (queue.partition_concurrency, queue.worker_concurrency) == (1, None)
        # a slow safety net: eve dequeues when kicked
        assert queue.polling_interval_sec == POLLING_INTERVAL_SECONDS > 1.0
        queue.set_polling_interval_sec(0.5)  # as a newer version's registration would
        declare_turn_queue(config)
        again = client.retrieve_queue(TURN_QUEUE)
        assert again is not None and again.polling_interval_sec == 0.5
    finally:
        client.destroy()
        engine = config.get("system_database_engine")
        if engine is not None:
            engine.dispose()
