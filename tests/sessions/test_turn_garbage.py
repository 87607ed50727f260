"""A finished turn leaves no reference cycle of eve's objects behind (issue 31).

What a cycle holds is freed only by a full collection, which at a thousand sessions stops a
worker for a second every few seconds' worth of turns; what no cycle holds goes as soon as
the turn lets go of it. Here the collector is off while turns run, and then one collection
saves what it finds (``DEBUG_SAVEALL``) instead of freeing it: none of it may be eve's.
"""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from tests.conftest import AppFactory
from tests.sessions.apps import say, scripted_app
from tests.sessions.harness import count
from tests.sessions.inprocess import InProcessServer

#: turns run while the collector is off; each finished before the next one was sent
TURNS = 3


@contextmanager
def _garbage_saved() -> Iterator[list[object]]:
    """The objects made inside the block that a collection after it finds in cycles.

    Made inside it: an object an earlier test left in a cycle can outlive the first
    collection here, held for a moment by another thread (the WAL checkpoints' pass holds
    every engine it watches, ``wal_checkpoints.py``), and turn into garbage inside the
    block: once, the engines of 31 earlier apps did. So every object of eve's tracked as the
    block starts is held until the collection after it, and none of them can be garbage then.

    Only eve's (those the test counts): holding every object held the driver's cursors too,
    and one alive in a server's thread as the block began (a statement between its run and
    its rows read) then kept its statement running on its connection for the whole block,
    so the next ``COMMIT`` there failed ("SQL statements in progress"): a storage fault the
    test made itself, whose tracebacks it then found in cycles."""
    found: list[object] = []
    gc.collect()
    gc.disable()
    held = [o for o in gc.get_objects() if _is_eves(o)]
    try:
        yield found
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        found.extend(gc.garbage)
    finally:
        del held
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def _is_eves(o: object) -> bool:
    # (a type's ``__module__`` is not always a string: some metaclasses' is a descriptor)
    module = getattr(type(o), "__module__", None)
    return isinstance(module, str) and module.startswith("eve.")


def _eve_types(objects: list[object]) -> Counter[str]:
    return Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in objects if _is_eves(o))


def test_finished_turns_leave_no_cycle_of_eves_objects(make_app: AppFactory) -> None:
    root = scripted_app(make_app, [say(f"reply {i}") for i in range(TURNS + 1)])
    server = InProcessServer(root).start()
    try:
        # the first turn warms what is made once per process (caches, the session's feed)
        session = server.create("hello")
        server.wait_for(session, count("session.waiting"))
        with _garbage_saved() as garbage:
            for i in range(TURNS):
                server.send(session, f"again {i}")
                server.wait_for(session, count("session.waiting", 2 + i))
        left = _eve_types(garbage)
        del garbage
    finally:
        server.stop()
    # a turn still ending as the collection ran holds its objects yet: not garbage either way
    assert not left, f"eve's objects left in reference cycles by {TURNS} turns: {dict(left)}"
