"""A session made with its first message on PostgreSQL as one function of eve's schema, so a
create's ``202`` waits for one round trip (``pg_claim_sql.py`` does the same for a message).

What a first message's ``202`` stands for, committed together as the call returns: the
session's row, owned by its creator and ``opening`` with the creator's open claim
(``opening.py``), its first turn accepted in place 0, and the ``Idempotency-Key``'s answer.
Its open (``session.started``, its hooks, the initial state) is Python code, run by the
claim's holder after the answer; the first place is ``opening`` (``accepted.OPENING``), a
state nothing starts, until the open is recorded (``opening.opened``), so the turn never
starts without ``session.started`` before it. A holder that dies leaves it to whoever takes
the claim over: a replay of the create, or the sweep (``accepted_sweep.py``).

What it answers (``outcome``):
- ``answered``: the key is kept, with ``fingerprint`` and ``answer``: nothing was written
  (the caller replays it, or refuses a key reused for another request);
- ``created``: all of the above is written.

The create in a thread stays (SQLite's, and what this one leaves to it), so a create is
written twice: ``tests/sessions/test_pg_claim_agrees.py`` makes one each way and compares
the rows they leave once each session is open.

Two copies of one keyed create at once both find the key free and insert sessions of their
own; the second's key then meets the first's primary key and fails, nothing of it
committed, and the caller makes it in a thread, which replays it (as a create in a thread
does when its transaction meets the same).
"""

from __future__ import annotations

from eve.sessions.pg_claim_sql import KEY_ANSWERED, key_recorded

NAME = "eve_create_session_v1"

#: the call, with its parameters in ``CALL_PARAMS`` order (text; NULL for no key)
CALL = (
    f"SELECT outcome, fingerprint, answer FROM {NAME}"
    "($1, $2, $3, $4, $5::float8, $6, $7, $8::float8, $9, $10, $11, $12::float8, $13)"
).encode()
CALL_PARAMS = (
    "session_id",
    "owner_kind",
    "owner_id",
    "open_owner",
    "open_until",
    "input",
    "workflow_id",
    "now",
    "scope",
    "key",
    "fingerprint",
    "ttl",
    "answer",
)

DEFINITION = f"""
CREATE FUNCTION {NAME}(
    p_session text, p_owner_kind text, p_owner_id text, p_open_owner text,
    p_open_until float8, p_input text, p_workflow_id text, p_now float8,
    p_scope text, p_key text, p_fingerprint text, p_ttl float8, p_answer text,
    OUT outcome text, OUT fingerprint text, OUT answer text
) LANGUAGE plpgsql AS $create$
BEGIN
{KEY_ANSWERED}    INSERT INTO eve_sessions
        (id, created_at, status, next_turn, owner_id, owner_kind,
         open_stage, open_owner, open_until)
    VALUES
        (p_session, p_now, 'active', 1, p_owner_id, p_owner_kind,
         'opening', p_open_owner, p_open_until);
    INSERT INTO eve_accepted
        (session_id, turn, kind, input, state, workflow_id, reruns, accepted_at)
    VALUES
        (p_session, 0, 'turn', p_input, 'opening', p_workflow_id, 0, p_now);
{key_recorded("p_answer")}    outcome := 'created';
END
$create$
"""
