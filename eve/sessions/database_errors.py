"""Which driver failures mean the session database is out of reach, said without the URL.

The server answers those with a 503 the client may retry; other driver errors
(IntegrityError, ProgrammingError …) are bugs, answered 500. Kept here, beside the store,
so nothing outside ``eve.sessions`` needs to know the database library.
"""

from __future__ import annotations

import re

import sqlalchemy.exc as sa_exc

from eve.errors import DatabaseUnavailable
from eve.redact import redact

_UNAVAILABLE = (
    sa_exc.OperationalError,
    sa_exc.InterfaceError,
    sa_exc.DisconnectionError,
    sa_exc.TimeoutError,
)
#: the password of a ``scheme://user:password@host`` URL, for what goes to the log
_URL_PASSWORD = re.compile(r"(://[^:/@\s]*:)[^@\s]*@")


def failure_kind(error: BaseException) -> str:
    """The driver's exception name (the wrapper's when there is none): never its message,
    which names the host and database, nor SQLAlchemy's, which adds the parameters."""
    return type(getattr(error, "orig", None) or error).__name__


def unavailable(error: BaseException) -> DatabaseUnavailable | None:
    """The named error when ``error``, or one it was raised from (a library wrapping the
    driver's), says the database is out of reach; else None."""
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
