"""eve's own tables beside DBOS's, as SQLAlchemy Core declares them, and how a database
gets them: created when missing, and a column a later eve added made on an older one, once
per version of them (``schema_record.py``).

``eve.sessions.store`` reads and writes them; the modules that query a table directly (the
outbox, the session list, the opening of a session, idempotency keys) import it from here.
"""

from __future__ import annotations

import functools
import hashlib

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.schema import CreateIndex, CreateTable

from eve._sql_engines import add_missing_columns
from eve.sessions.schema_record import ensure_version

#: the version of the tables below, recorded in the database once it has them: raise it
#: with any change to them (a table, a column, an index), which the upgrade then makes on
#: a database an earlier eve made (``tests/sessions/test_schema_record.py`` checks)
TABLES_VERSION = 1
TABLES_PART = "tables"
_DIALECTS: dict[str, sa.Dialect] = {
    "sqlite": sqlite.dialect(),
    "postgresql": postgresql.dialect(),  # type: ignore[no-untyped-call]  # untyped there
}

_metadata = sa.MetaData()

sessions = sa.Table(
    "eve_sessions",
    _metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("ended_reason", sa.Text),
    sa.Column("next_turn", sa.Integer, nullable=False),
    #: the checkpoint as an eve before ``eve_checkpoints`` stored it; moved there on first use
    sa.Column("checkpoint", sa.Text),
    #: the session's current version in ``eve_checkpoints`` (NULL: none yet)
    sa.Column("checkpoint_version", sa.Integer),
    #: the turn workflow someone asked to cancel
    sa.Column("cancel_workflow_id", sa.String(128)),
    #: how far the session's opening got (``opening.OpenStage``); NULL: opened by an eve
    #: from before opening was recorded
    sa.Column("open_stage", sa.String(16)),
    #: who is opening it, and until when that claim holds unless renewed (``opening.py``)
    sa.Column("open_owner", sa.String(32)),
    sa.Column("open_until", sa.Float),
    #: the principal that created it (``eve.auth.Principal`` id and kind); NULL: created by
    #: an eve from before ownership, and the operator's
    sa.Column("owner_id", sa.String(255)),
    sa.Column("owner_kind", sa.String(16)),
    #: the session this one is a fork of (``forking.py``); NULL: not a fork
    sa.Column("forked_from", sa.String(64)),
    #: a principal's own sessions, newest first (``listing.py``)
    sa.Index("eve_sessions_owner", "owner_kind", "owner_id", "created_at"),
    #: the turns asked to cancel, which every worker running turns looks up four times a
    #: second (``SessionStore.cancel_requested``): the few rows that name one, not a scan
    #: of every session ever made
    sa.Index(
        "eve_sessions_cancel",
        "cancel_workflow_id",
        sqlite_where=sa.text("cancel_workflow_id IS NOT NULL"),
        postgresql_where=sa.text("cancel_workflow_id IS NOT NULL"),
    ),
)

#: a session's checkpoints by version: the current one and the one before it, which a
#: replay of the workflow that saved the current one still starts from (``saved_by`` names
#: it; ``checkpoint_steps.py``), so nothing stores a copy of the history per turn
checkpoints = sa.Table(
    "eve_checkpoints",
    _metadata,
    sa.Column("session_id", sa.String(64), primary_key=True),
    sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
    #: the checkpoint's JSON; NULL for a cleared one (a reset)
    sa.Column("data", sa.Text),
    #: the workflow whose save wrote it: a replay of that workflow starts from the version
    #: before (NULL: saved outside a workflow, or by an eve before this column)
    sa.Column("saved_by", sa.String(255)),
)

#: each durable step's record (``durable_steps.py``): the value a step produced, the state
#: after it and its events, read once when its workflow's body (re)starts, so a replay
#: neither asks the model again nor runs a tool twice. Kept while DBOS keeps the workflow
#: (``retention.py``)
step_records = sa.Table(
    "eve_step_records",
    _metadata,
    sa.Column("workflow_id", sa.String(255), primary_key=True),
    #: the step's key in its turn (``step:0``, ``step:0:call:1``)
    sa.Column("step_key", sa.String(200), primary_key=True),
    #: ``StepCheckpoint`` as JSON, redacted
    sa.Column("record", sa.Text, nullable=False),
    #: when it was recorded (epoch seconds): the order a reader lists them in
    sa.Column("recorded_at", sa.Float, nullable=False),
)

events = sa.Table(
    "eve_events",
    _metadata,
    sa.Column("session_id", sa.String(64), primary_key=True),
    sa.Column("idx", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("workflow_id", sa.String(128)),
    #: position among the events the workflow body emitted (None inside a step)
    sa.Column("body_seq", sa.Integer),
    #: the durable step an event was emitted in, and which run of it
    sa.Column("step_key", sa.String(200)),
    sa.Column("attempt", sa.Integer),
    sa.Column("payload", sa.Text, nullable=False),
    sa.Index("eve_events_workflow", "workflow_id"),
)

input_requests = sa.Table(
    "eve_input_requests",
    _metadata,
    sa.Column("request_id", sa.String(64), primary_key=True),
    sa.Column("session_id", sa.String(64), nullable=False),
    sa.Column("workflow_id", sa.String(128), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    #: the option ids a question offers, as JSON; NULL for a tool approval (approve, deny)
    sa.Column("options", sa.Text),
    #: the principal whose turn asks (id and kind); NULL: asked before turns recorded one,
    #: and only an operator answers it
    sa.Column("asker_id", sa.String(255)),
    sa.Column("asker_kind", sa.String(16)),
    #: who else may answer, as the tool's rule names it (``role:finance``); NULL: nobody else
    sa.Column("answer_by", sa.String(128)),
    #: a form's fields (an MCP server's elicitation) as a JSON Schema; NULL: not a form
    sa.Column("form", sa.Text),
    #: a form's answer until the waiting call takes it (``form_requests.py``): a form is
    #: answered inside the step that runs the call, where no workflow message can be read
    sa.Column("answer", sa.Text),
    #: what a session waits on, for a channel deciding whether a message answers it
    sa.Index("eve_input_requests_session", "session_id", "status"),
)

#: the MCP tool calls a durable turn sent, by call (``mcp_calls.py``): a turn run again
#: after a restart does not send them again, and resumes the ones that run as tasks
mcp_calls = sa.Table(
    "eve_mcp_calls",
    _metadata,
    #: the turn's (or task's) workflow and the model's call id, hashed
    sa.Column("call_key", sa.String(64), primary_key=True),
    sa.Column("workflow_id", sa.String(128), nullable=False),
    #: the server's task id, once the call runs as a task
    sa.Column("task_id", sa.String(255)),
)

#: the first answer to each ``Idempotency-Key`` per route and session (``idempotency.py``)
idempotency_keys = sa.Table(
    "eve_idempotency_keys",
    _metadata,
    #: ``POST /session`` or ``POST /session/<id>``: a key is only ever compared within one
    sa.Column("scope", sa.String(128), primary_key=True),
    sa.Column("key", sa.String(255), primary_key=True),
    #: sha256 of the request as decoded: the same key with another body is refused
    sa.Column("fingerprint", sa.String(64), nullable=False),
    sa.Column("answer", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)

#: which session a channel's conversation (a Slack thread) is, for as long as the session is
#: kept: unlike the Idempotency-Key that opened it, this does not expire with the key's
#: 24 hours (``eve.channels.conversation_keys``)
conversation_keys = sa.Table(
    "eve_conversation_keys",
    _metadata,
    #: the owning principal, as an idempotency key's scope names it (``scope_of``)
    sa.Column("scope", sa.String(128), primary_key=True),
    #: the conversation's key (``slack:<channel name>:<team>:<channel>:<thread ts>``)
    sa.Column("key", sa.String(255), primary_key=True),
    sa.Column("session_id", sa.String(64), nullable=False),
    #: when the conversation last spoke: a restart picks up the recent ones
    sa.Column("touched_at", sa.Float, nullable=False),
    #: who delivers its replies now, and until when (a lease: one worker at a time reads
    #: the conversation back and posts what it lacks); NULL: nobody
    sa.Column("lease_owner", sa.String(64)),
    sa.Column("lease_until", sa.Float),
    sa.Index("eve_conversation_keys_session", "session_id"),
)

#: every claimed place in a session's queue (a turn, a reset, a compaction) from the claim
#: until its outcome is in the log: the durable fact a 202 stands for (``accepted.py``)
accepted_places = sa.Table(
    "eve_accepted",
    _metadata,
    sa.Column("session_id", sa.String(64), primary_key=True),
    sa.Column("turn", sa.Integer, primary_key=True, autoincrement=False),
    #: ``turn``, ``reset`` or ``compact``
    sa.Column("kind", sa.String(16), nullable=False),
    #: a turn's input as JSON (redacted already, as DBOS stores it); cleared once done
    sa.Column("input", sa.Text),
    #: ``accepted`` (not on DBOS's queue yet), ``enqueued`` or ``done``
    sa.Column("state", sa.String(16), nullable=False),
    #: the workflow that runs it now: its own id, or a rerun's (``<id>.rerun-<n>``)
    sa.Column("workflow_id", sa.String(200), nullable=False),
    #: how many times the sweep started it again
    sa.Column("reruns", sa.Integer, nullable=False),
    sa.Column("accepted_at", sa.Float, nullable=False),
    sa.Index("eve_accepted_state", "state"),
    sa.Index("eve_accepted_workflow", "workflow_id"),
)

workers = sa.Table(
    "eve_workers",
    _metadata,
    sa.Column("executor_id", sa.String(128), primary_key=True),
    sa.Column("application_version", sa.String(64), nullable=False),
    sa.Column("heartbeat_at", sa.Float, nullable=False),
    #: the process holding the id: host, pid, start time, nonce (``worker_identity.py``);
    #: null in a row an older eve wrote
    sa.Column("holder", sa.String(300)),
)

#: an MCP connection's OAuth grant per principal (``oauth_tokens.py``): the tokens and the
#: registered client, here and nowhere else (never in artifacts, events or DBOS's tables)
mcp_oauth = sa.Table(
    "eve_mcp_oauth",
    _metadata,
    #: sha256 of the connection's file and its server's URL: another URL is another grant
    sa.Column("grant_key", sa.String(64), primary_key=True),
    #: the principal's kind and id (``user:alice``): each person signs in for themselves
    sa.Column("principal", sa.String(300), primary_key=True),
    sa.Column("connection", sa.String(255), nullable=False),
    #: the token response as JSON (access and refresh token, scope); NULL: none yet
    sa.Column("tokens", sa.Text),
    #: when the access token expires (epoch seconds); NULL: unknown
    sa.Column("expires_at", sa.Float),
    #: the client registration as JSON (RFC 7591's response); NULL: none yet
    sa.Column("client_info", sa.Text),
    sa.Column("updated_at", sa.Float, nullable=False),
)


#: the files of sandboxed sessions' workspaces, each content once (``workspaces.py``)
workspace_blobs = sa.Table(
    "eve_workspace_blobs",
    _metadata,
    sa.Column("sha256", sa.String(64), primary_key=True),
    sa.Column("data", sa.LargeBinary, nullable=False),
)

#: workspace states (``eve.sandbox.snapshot.Tree`` as JSON) by the sha256 of that JSON; a
#: step's record names the tree the workspace held after it
workspace_trees = sa.Table(
    "eve_workspace_trees",
    _metadata,
    sa.Column("tree_id", sa.String(64), primary_key=True),
    sa.Column("tree", sa.Text, nullable=False),
)

#: each sandboxed session's latest workspace state: what a worker that has no copy of the
#: directory (a restart elsewhere, a fork) restores it from
workspace_heads = sa.Table(
    "eve_workspace_heads",
    _metadata,
    sa.Column("session_id", sa.String(64), primary_key=True),
    sa.Column("tree_id", sa.String(64), nullable=False),
)

#: which workflow's step records name which tree: a replay of the workflow restores them,
#: so retention keeps a tree while a workflow DBOS still keeps names it (``workspace_sweep``)
workspace_refs = sa.Table(
    "eve_workspace_refs",
    _metadata,
    sa.Column("workflow_id", sa.String(255), primary_key=True),
    sa.Column("tree_id", sa.String(64), primary_key=True),
)


def create_tables(engine: Engine) -> None:
    """Make or upgrade eve's tables on ``engine``'s database, unless its record says they
    are at ``TABLES_VERSION`` already (``schema_record.py``)."""
    ensure_version(engine, part=TABLES_PART, version=TABLES_VERSION, upgrade=_upgrade)


def _upgrade(c: Connection) -> None:
    """The tables missing, then on those an earlier eve made, the columns and indexes a later
    one added (each nullable), under the schema lock (``schema_record.ensure_version``). A
    table made here is whole: its DDL is the one compiled for the dialect (``_ddl``)."""
    existing = set(sa.inspect(c).get_table_names())
    for table, statements in _ddl(c.dialect.name):
        if table.name not in existing:
            for statement in statements:
                c.exec_driver_sql(statement)
    older = [table for table in _metadata.sorted_tables if table.name in existing]
    add_missing_columns(c, older)
    for table in older:
        for index in table.indexes:
            index.create(c, checkfirst=True)


@functools.cache
def _ddl(dialect_name: str) -> list[tuple[sa.Table, list[str]]]:
    """Each table's CREATE TABLE and CREATE INDEX statements for the dialect, compiled once
    per process: a new database (every test's) made to no SQLAlchemy compile."""
    dialect = _DIALECTS[dialect_name]
    return [
        (
            table,
            [
                str(CreateTable(table).compile(dialect=dialect)),
                *(
                    str(CreateIndex(index).compile(dialect=dialect))
                    for index in sorted(table.indexes, key=lambda index: str(index.name))
                ),
            ],
        )
        for table in _metadata.sorted_tables
    ]


def tables_fingerprint(dialect_name: str) -> str:
    """sha256 of the DDL of eve's tables and indexes for the dialect: a test compares it
    with the one recorded for ``TABLES_VERSION``, so a change to the tables without a new
    version (which no database would then get) fails there."""
    statements = [statement for _, table in _ddl(dialect_name) for statement in table]
    return hashlib.sha256("\n".join(statements).encode()).hexdigest()
