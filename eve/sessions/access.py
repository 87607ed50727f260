"""Who may see a session and who may answer what it asks (``docs/auth.md``).

A session belongs to the principal that created it: it and operators may see it and act on
it; to anyone else it does not exist (``SessionNotFound``, never a 403 that would say it
does). An input request belongs to the principal whose turn asked it: it, an operator, or a
holder of the role the tool's rule names (``always(by="role:finance")``) may answer it;
anyone else who may see the session gets ``AnswerNotAllowed``.
"""

from __future__ import annotations

import sqlalchemy as sa

from eve.auth.principal import Principal, PrincipalRef, ref_of
from eve.authoring.approval import role_of
from eve.errors import AnswerNotAllowed, SessionNotFound
from eve.sessions.store import PendingRequest, SessionRow
from eve.sessions.tables import sessions


def may_see(owner: PrincipalRef, principal: Principal) -> bool:
    required = owner_to_be(principal)
    return required is None or required == owner


def owner_to_be(principal: Principal) -> PrincipalRef | None:
    """The owner a session must have for ``principal`` to see it; None: any (an operator).
    ``may_see`` applies it, and a message's claim on PostgreSQL hands it to its SQL
    (``pg_claim_sql.py``), which compares the row's owner's kind and id with it."""
    return None if principal.is_operator else ref_of(principal)


def seen_by(row: SessionRow | None, session_id: str, principal: Principal) -> SessionRow:
    """``row`` if ``principal`` may see it; else, as for no row at all, ``SessionNotFound``."""
    if row is None or not may_see(row.owner, principal):
        raise SessionNotFound(f"no session {session_id}", session_id=session_id)
    return row


def owned_by(principal: Principal) -> sa.ColumnElement[bool] | None:
    """The sessions ``principal`` may list, as a WHERE clause (None: all of them)."""
    if principal.is_operator:
        return None
    return sa.and_(sessions.c.owner_kind == principal.kind, sessions.c.owner_id == principal.id)


def by_role(pending: PendingRequest, principal: Principal) -> bool:
    """``principal`` holds the role the request's rule names."""
    role = None if pending.answer_by is None else role_of(pending.answer_by)
    return role is not None and role in principal.roles


def may_answer(pending: PendingRequest, principal: Principal) -> bool:
    return principal.is_operator or principal.is_same(pending.asker) or by_role(pending, principal)


def check_answer(pending: PendingRequest, request_id: str, principal: Principal) -> None:
    if may_answer(pending, principal):
        return
    others = f" or a holder of {pending.answer_by}" if pending.answer_by else ""
    raise AnswerNotAllowed(
        f"input request {request_id} may be answered by the principal whose message asked "
        f"it ({pending.asker.kind} {pending.asker.id!r}), an operator{others}; "
        f"not by {principal.kind} {principal.id!r}",
        request_id=request_id,
        answer_by=pending.answer_by,
    )
