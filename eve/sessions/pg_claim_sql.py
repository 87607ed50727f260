"""A message's claim on PostgreSQL as one function of eve's schema, so it is one round trip.

The claim in a thread (``store.claim_turn`` with ``SessionService._enqueue``'s work) is a
transaction of five or six statements, each a round trip. Here the same statements run
inside ``eve_claim_message_v2``, called as one statement on a connection in autocommit
mode: it commits as it returns (with the server's ``synchronous_commit``, as any commit of
eve's), and an error anywhere rolls all of it back. PL/pgSQL runs each statement with a
snapshot of its own (READ COMMITTED), as the transaction's statements ran: a claim that
waited for the session's row lock sees the place the claim before it committed. (One
statement of data-modifying CTEs would not: all of it reads the snapshot taken before the
wait, and would start a turn while the one before it runs.)

What it answers (``outcome``):
- ``answered``: the ``Idempotency-Key`` is kept, with ``fingerprint`` and ``answer``: nothing
  was written (the caller replays it, or refuses a key reused for another request);
- ``ended``: the session is not active, not there, or not the asker's to message (a
  principal other than an operator names itself as the owner it must be: ``p_owner_kind``
  and ``p_owner_id``, from ``access.owner_to_be``): nothing was written, and the caller says
  which as the claim in a thread does (``SessionService._refused``);
- ``claimed``: the place ``turn`` is accepted, the key recorded; ``starts`` when nothing of
  its session is unfinished before it (``accepted.accept``).

The claim in a thread stays (SQLite's, and what this one leaves to it), so a claim is
written twice: ``tests/sessions/test_pg_claim_agrees.py`` claims the same messages both
ways and compares the rows they leave.

The key is read before the session's row is locked (the thread's claim reads it after): a
repeat sent while its first request is still being claimed then meets the key's primary
key and fails, nothing committed, and the caller claims in a thread, which replays it.

The name carries a version: a change to the function is a new name, so workers of two eve
versions on one database each call their own (``_v1`` had no owner: a principal's message
was claimed in a thread).
"""

from __future__ import annotations

from typing import Any

import psycopg

NAME = "eve_claim_message_v2"

#: the call, with its parameters in ``CALL_PARAMS`` order (text; NULL for no key)
CALL = (
    f"SELECT outcome, turn, starts, fingerprint, answer FROM {NAME}"
    "($1, $2, $3, $4, $5, $6::float8, $7, $8, $9, $10::float8, $11, $12)"
).encode()
CALL_PARAMS = (
    "session_id",
    "input",
    "workflow_before",
    "answer_before",
    "answer_after",
    "now",
    "scope",
    "key",
    "fingerprint",
    "ttl",
    "owner_kind",
    "owner_id",
)

#: a function's first statements: the key's kept answer, if any, is the outcome
#: (``p_scope``, ``p_key``, ``p_now``, ``p_ttl``; ``OUT fingerprint``, ``answer``, ``outcome``)
KEY_ANSWERED = """
    IF p_key IS NOT NULL THEN
        SELECT k.fingerprint, k.answer INTO fingerprint, answer FROM eve_idempotency_keys k
        WHERE k.scope = p_scope AND k.key = p_key AND k.created_at >= p_now - p_ttl;
        IF FOUND THEN
            outcome := 'answered';
            RETURN;
        END IF;
    END IF;
"""


def key_recorded(answer: str) -> str:
    """A function's statements that keep ``answer`` (an SQL expression) for the key, as
    ``idempotency.record`` does: the key's own expired row first, which would collide."""
    return f"""
    IF p_key IS NOT NULL THEN
        DELETE FROM eve_idempotency_keys k
        WHERE k.scope = p_scope AND k.key = p_key AND k.created_at < p_now - p_ttl;
        INSERT INTO eve_idempotency_keys (scope, key, fingerprint, answer, created_at)
        VALUES (p_scope, p_key, p_fingerprint, {answer}, p_now);
    END IF;
"""


DEFINITION = f"""
CREATE FUNCTION {NAME}(
    p_session text, p_input text, p_workflow_before text,
    p_answer_before text, p_answer_after text, p_now float8,
    p_scope text, p_key text, p_fingerprint text, p_ttl float8,
    p_owner_kind text, p_owner_id text,
    OUT outcome text, OUT turn integer, OUT starts boolean,
    OUT fingerprint text, OUT answer text
) LANGUAGE plpgsql AS $claim$
BEGIN
{KEY_ANSWERED}    UPDATE eve_sessions s SET next_turn = s.next_turn + 1
    WHERE s.id = p_session AND s.status = 'active'
        AND (p_owner_kind IS NULL OR (s.owner_kind = p_owner_kind AND s.owner_id = p_owner_id))
    RETURNING s.next_turn - 1 INTO turn;
    IF NOT FOUND THEN
        outcome := 'ended';
        RETURN;
    END IF;
    INSERT INTO eve_accepted
        (session_id, turn, kind, input, state, workflow_id, reruns, accepted_at)
    VALUES
        (p_session, turn, 'turn', p_input, 'accepted', p_workflow_before || turn, 0, p_now);
    starts := NOT EXISTS (
        SELECT 1 FROM eve_accepted a
        WHERE a.session_id = p_session AND a.state <> 'done' AND a.turn < {NAME}.turn
    );
{key_recorded("p_answer_before || turn || p_answer_after")}    outcome := 'claimed';
END
$claim$
"""


def install(
    connection: psycopg.Connection[Any], name: str = NAME, definition: str = DEFINITION
) -> None:
    """Create the function ``name`` unless it is there (``connection`` in autocommit mode).
    Two workers starting at once may both create it: the second's fails, and finds it."""
    if _installed(connection, name):
        return
    try:
        connection.execute(definition.encode())
    except psycopg.Error:
        if not _installed(connection, name):
            raise


def _installed(connection: psycopg.Connection[Any], name: str) -> bool:
    found = connection.execute("SELECT 1 FROM pg_proc WHERE proname = %s", (name,)).fetchone()
    return found is not None
