"""Which driver failures mean the session database is out of reach, said without the URL.

The server answers those with a 503 the client may retry; other driver errors
(IntegrityError, ProgrammingError …) are bugs, answered 500. Kept here, beside the store,
so nothing outside ``eve.sessions`` needs to know the database library.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from contextvars import ContextVar

import sqlalchemy.exc as sa_exc
from dbos import DBOS
from sqlalchemy.engine import ExceptionContext

from eve._redact import redact
from eve.errors import DatabaseUnavailable, StorageFailed

_UNAVAILABLE = (
    sa_exc.OperationalError,
    sa_exc.InterfaceError,
    sa_exc.DisconnectionError,
    sa_exc.TimeoutError,
)
#: the password of a ``scheme://user:password@host`` URL, for what goes to the log
_URL_PASSWORD = re.compile(r"(://[^:/@\s]*:)[^@\s]*@")


#: what a driver's message says when a write could not be stored, by ``StorageFailed.kind``
_STORAGE_KINDS = (
    ("database or disk is full", "disk_full"),
    ("no space left on device", "disk_full"),
    ("could not extend file", "disk_full"),
    ("disk i/o error", "io_error"),
    ("input/output error", "io_error"),
    ("readonly database", "read_only"),
    ("read-only", "read_only"),
    ("database is locked", "locked"),
)
_WHAT = {
    "disk_full": "the disk is full",
    "io_error": "the disk reported an I/O error",
    "read_only": "the files are read-only",
    "locked": "another writer held its lock past the busy timeout",
}
#: set while a request is served: a lock it meets past the busy timeout is a 503 now,
#: not one of DBOS's retries for as long as the lock is held
_FAIL_FAST: ContextVar[bool] = ContextVar("eve_fail_fast", default=False)


@contextlib.contextmanager
def raised(flag: ContextVar[bool], value: bool = True) -> Iterator[None]:
    """``flag`` is ``value`` inside the block (and in the threads ``asyncio.to_thread``
    starts)."""
    token = flag.set(value)
    try:
        yield
    finally:
        flag.reset(token)


def fail_fast() -> contextlib.AbstractContextManager[None]:
    return raised(_FAIL_FAST)


def in_workflow_body() -> contextlib.AbstractContextManager[None]:
    """Around a workflow body: ``failing_fast`` is False in it, as it is in any workflow,
    without asking DBOS at each of its fifty-odd store calls a turn (a request's context,
    copied into the body it starts, has the flag raised)."""
    return raised(_FAIL_FAST, False)


def failing_fast() -> bool:
    """Whether a request is being served (``fail_fast``): its database calls do not wait.

    Never inside a DBOS workflow, though a request's context starts one: its body and what
    DBOS writes around it (the outcome, after the body returns, in the body's task) are
    the turn's work. An outcome write that failed fast left the workflow pending, its body
    done, until the next restart."""
    return _FAIL_FAST.get() and DBOS.workflow_id is None


def transient(error: BaseException) -> bool:
    """Whether ``error`` may pass if the call is made again: the database went away (a
    restart, a killed connection) or a lock was held past the busy timeout. A full disk or
    read-only files are not: the engine resumes what they stopped (``engine.py``)."""
    failed = storage_failure(error)
    if failed is not None:
        return failed.kind == "locked"
    return unavailable(error) is not None


def storage_failure(error: BaseException) -> StorageFailed | None:
    """The named error when ``error`` (or what it was raised from) is a write the storage
    refused: disk full, I/O error, read-only files, a lock held too long."""
    seen: BaseException | None = error
    for _ in range(10):  # a bound, in case a cause chain loops
        if seen is None:
            return None
        if isinstance(seen, StorageFailed):
            return seen
        # database errors only: a tool's own OSError ("Read-only file system") is no fault
        # of the session storage
        if isinstance(seen, sa_exc.DBAPIError):
            text = str(getattr(seen, "orig", None) or seen).lower()
            for needle, kind in _STORAGE_KINDS:
                if needle in text:
                    return storage_failed(kind)
        seen = seen.__cause__ or seen.__context__
    return None


def storage_failed(kind: str) -> StorageFailed:
    return StorageFailed(
        f"the session storage could not be written: {_WHAT[kind]}; "
        "retry once it can be (a turn it stopped resumes by itself)",
        kind=kind,
    )


def refuse_lock_in_request(context: ExceptionContext) -> None:
    """SQLAlchemy's ``handle_error`` hook of eve's SQLite engines: in a request, a lock
    past the busy timeout becomes ``StorageFailed``, which DBOS does not retry."""
    if failing_fast() and "database is locked" in str(context.original_exception):
        raise storage_failed("locked")


def failure_kind(error: BaseException) -> str:
    """The driver's exception name (the wrapper's when there is none): never its message,
    which names the host and database, nor SQLAlchemy's, which adds the parameters."""
    return type(getattr(error, "orig", None) or error).__name__


def unavailable(error: BaseException) -> DatabaseUnavailable | None:
    """The named error when ``error``, or one it was raised from (a library wrapping the
    driver's), says the database is out of reach; else None."""
    if (failed := storage_failure(error)) is not None:
        return failed
    seen: BaseException | None = error
    for _ in range(10):  # a bound, in case a cause chain loops
        if seen is None:
            return None
        if isinstance(seen, _UNAVAILABLE) or (
            isinstance(seen, sa_exc.DBAPIError) and seen.connection_invalidated
        ):
            return DatabaseUnavailable(
                f"the session database is unavailable ({failure_kind(error)}); "
                "retry once it is reachable again"
            )
        seen = seen.__cause__
    return None


def first_line(error: BaseException) -> str:
    cause = getattr(error, "orig", None) or error
    return (str(cause).strip().splitlines() or [""])[0]


def scrub(text: str) -> str:
    """``text`` for the server log: secrets redacted and URL passwords too."""
    return _URL_PASSWORD.sub(r"\1[redacted]@", redact(text))
